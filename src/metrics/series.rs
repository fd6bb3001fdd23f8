//! Time series: per-bucket counts (attempts, retries, outcomes) and states (queue, in flight).
//!
//! Buckets are filled lazily: before an event that lies past the current bucket, the driver
//! calls [`TimeSeries::tick`] with the state at the end of each bucket that ended (read for
//! that instant), or once for a run of buckets whose state cannot differ. So a state column
//! holds the value at the end of its bucket, and an idle stretch costs at most a reading per
//! bucket while a breaker or a ratio budget can still change without an event.
//! A run that goes on far longer than its buckets foresaw (a long drain, a storm) does not grow
//! the series without bound: past [`MAX_ROWS`] buckets, neighbours merge and the width doubles.
//!
//! Beside the rows, each bucket keeps the latencies of the answers that ended in it, binned
//! like the headline latency distribution ([`LatencyBins`]), so that its p50 and p99 can be
//! read, alone or pooled with other buckets and replications.

use crate::engine::{SimDuration, SimTime};
use crate::model::Outcome;

use super::{LATENCY_BINS, latency_bin_of, latency_bin_upper_ms};

/// The columns of a time-series row. The order is the CSV column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Logical requests started in the bucket (what the clients asked for).
    Started,
    /// First attempts sent in the bucket.
    FirstAttempts,
    /// Retries sent in the bucket (the retry-storm histogram), and hedges: every attempt
    /// beyond a request's first.
    Retries,
    /// Attempts that reached the server in the bucket.
    Attempts,
    /// Logical requests that ended successfully in the bucket (goodput).
    Succeeded,
    /// Logical requests that ended in failure in the bucket.
    Failed,
    /// Attempts answered successfully (CSV `attempt_success`).
    AttemptSuccess,
    /// Attempts answered `error`.
    AttemptError,
    /// Attempts answered `rejected`.
    AttemptRejected,
    /// Attempts answered `throttled`.
    AttemptThrottled,
    /// Attempts that timed out.
    AttemptTimeout,
    /// Attempts that lost an optimistic-concurrency write.
    AttemptConflict,
    /// Attempts answered `permanent`.
    AttemptPermanent,
    /// Attempts that ended `bulkhead_full`: a full bulkhead refused them, at the client or,
    /// for a client's attempt at the entry of a call graph, at a call the entry made.
    AttemptBulkheadFull,
    /// Attempts answered `degraded`: a fallback answered for a call that failed.
    AttemptDegraded,
    /// Attempts the server finished serving.
    Served,
    /// Served attempts whose client had given up.
    Wasted,
    /// Attempts waiting at the end of the bucket.
    QueueLen,
    /// Attempts in service at the end of the bucket.
    InService,
    /// Logical requests in flight at the end of the bucket.
    InFlight,
    /// Circuit breakers open at the end of the bucket.
    BreakersOpen,
    /// Mean fill level of the retry budgets at the end of the bucket, in [0, 1] (0 without a
    /// budget). Kept in millionths inside a row; see [`Column::scale`].
    BudgetLevel,
    /// Replicas ejected by their callers' outlier detectors at the end of the bucket, every
    /// caller's added up. Last, and written to a CSV only by a run with outlier detection
    /// ([`Column::written`]).
    Ejected,
}

/// Number of columns.
pub const COLUMNS: usize = 23;

/// Most buckets one series keeps; past this the buckets merge pairwise and double in width.
pub const MAX_ROWS: usize = 1 << 16;

impl Column {
    /// Every column, in CSV order.
    pub const ALL: [Column; COLUMNS] = [
        Column::Started,
        Column::FirstAttempts,
        Column::Retries,
        Column::Attempts,
        Column::Succeeded,
        Column::Failed,
        Column::AttemptSuccess,
        Column::AttemptError,
        Column::AttemptRejected,
        Column::AttemptThrottled,
        Column::AttemptTimeout,
        Column::AttemptConflict,
        Column::AttemptPermanent,
        Column::AttemptBulkheadFull,
        Column::AttemptDegraded,
        Column::Served,
        Column::Wasted,
        Column::QueueLen,
        Column::InService,
        Column::InFlight,
        Column::BreakersOpen,
        Column::BudgetLevel,
        Column::Ejected,
    ];

    /// The columns a CSV of series writes: every one for a run with outlier detection
    /// (`ejected`), the others (which every run wrote before there was any) otherwise.
    pub fn written(ejects: bool) -> &'static [Column] {
        if ejects {
            &Column::ALL
        } else {
            &Column::ALL[..COLUMNS - 1]
        }
    }

    /// The CSV header name.
    pub fn name(self) -> &'static str {
        match self {
            Column::Started => "started",
            Column::FirstAttempts => "first_attempts",
            Column::Retries => "retries",
            Column::Attempts => "attempts",
            Column::Succeeded => "succeeded",
            Column::Failed => "failed",
            Column::AttemptSuccess => "attempt_success",
            Column::AttemptError => "attempt_error",
            Column::AttemptRejected => "attempt_rejected",
            Column::AttemptThrottled => "attempt_throttled",
            Column::AttemptTimeout => "attempt_timeout",
            Column::AttemptConflict => "attempt_conflict",
            Column::AttemptPermanent => "attempt_permanent",
            Column::AttemptBulkheadFull => "attempt_bulkhead_full",
            Column::AttemptDegraded => "attempt_degraded",
            Column::Served => "served",
            Column::Wasted => "wasted",
            Column::QueueLen => "queue_len",
            Column::InService => "in_service",
            Column::InFlight => "in_flight",
            Column::BreakersOpen => "breakers_open",
            Column::BudgetLevel => "budget_level",
            Column::Ejected => "ejected",
        }
    }

    /// What one unit of the stored integer is worth in the CSV.
    pub fn scale(self) -> f64 {
        match self {
            Column::BudgetLevel => 1e-6,
            _ => 1.0,
        }
    }

    /// Whether the column is a state sampled at the end of the bucket (not a count).
    pub fn is_state(self) -> bool {
        matches!(
            self,
            Column::QueueLen
                | Column::InService
                | Column::InFlight
                | Column::BreakersOpen
                | Column::BudgetLevel
                | Column::Ejected
        )
    }

    /// The column counting attempts that ended with `o` (none for the outcomes a client
    /// policy gives without sending an attempt: budget exhausted, breaker open, deadline,
    /// throttled locally).
    #[inline]
    pub fn for_attempt_outcome(o: Outcome) -> Option<Column> {
        Some(match o {
            Outcome::Success => Column::AttemptSuccess,
            Outcome::Error => Column::AttemptError,
            Outcome::Rejected => Column::AttemptRejected,
            Outcome::Throttled => Column::AttemptThrottled,
            Outcome::Timeout => Column::AttemptTimeout,
            Outcome::Conflict => Column::AttemptConflict,
            Outcome::Permanent => Column::AttemptPermanent,
            Outcome::BulkheadFull => Column::AttemptBulkheadFull,
            Outcome::Degraded => Column::AttemptDegraded,
            _ => return None,
        })
    }
}

/// One bucket's values, indexed by `Column as usize`.
pub type Row = [u32; COLUMNS];

/// The states sampled at the end of a bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Attempts waiting.
    pub queue_len: u32,
    /// Attempts in service.
    pub in_service: u32,
    /// Logical requests in flight.
    pub in_flight: u32,
    /// Circuit breakers open.
    pub breakers_open: u32,
    /// Mean budget level in millionths.
    pub budget_level_ppm: u32,
    /// Replicas ejected by callers' outlier detectors, every caller's added up.
    pub ejected: u32,
}

/// How many answers a [`LatencyBins`] counts per bin: `u32` in a replication (saturating),
/// `u64` once replications are pooled.
pub trait BinCount: Copy + Default + Into<u64> {
    /// `self + n`, saturating.
    fn plus(self, n: u64) -> Self;
}

impl BinCount for u32 {
    #[inline(always)]
    fn plus(self, n: u64) -> u32 {
        u32::try_from(u64::from(self).saturating_add(n)).unwrap_or(u32::MAX)
    }
}

impl BinCount for u64 {
    #[inline(always)]
    fn plus(self, n: u64) -> u64 {
        self.saturating_add(n)
    }
}

/// The answers that ended in one bucket, per latency bin ([`super::latency_bin_upper_ms`]: 20
/// bins a decade, each 12 % wider than the one before), holding only the bins from the lowest
/// to the highest one used: a bucket's latencies seldom span more than two decades, so it
/// costs a few dozen counts, and an empty bucket none.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyBins<C = u32> {
    /// The first bin held.
    lo: u16,
    /// The counts of bins `lo`, `lo + 1`, ...
    counts: Vec<C>,
}

impl<C: BinCount> LatencyBins<C> {
    /// Adds `n` answers to bin `bin` (< [`LATENCY_BINS`]).
    #[inline(always)]
    pub fn add(&mut self, bin: usize, n: u64) {
        let i = bin.wrapping_sub(usize::from(self.lo));
        match self.counts.get_mut(i) {
            Some(c) => *c = c.plus(n),
            None => self.widen(bin, n),
        }
    }

    /// [`LatencyBins::add`] to a bin outside those held: the bins held grow to reach it.
    #[cold]
    fn widen(&mut self, bin: usize, n: u64) {
        let lo = usize::from(self.lo);
        if self.counts.is_empty() {
            self.lo = bin as u16;
            self.counts.push(C::default().plus(n));
        } else if bin < lo {
            let mut counts = vec![C::default(); lo - bin];
            counts.append(&mut self.counts);
            self.counts = counts;
            self.lo = bin as u16;
            self.counts[0] = self.counts[0].plus(n);
        } else {
            self.counts.resize(bin - lo + 1, C::default());
            self.counts[bin - lo] = self.counts[bin - lo].plus(n);
        }
    }

    /// The bins with answers, as (bin, answers), in order.
    pub fn bins(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let lo = usize::from(self.lo);
        self.counts
            .iter()
            .enumerate()
            .map(move |(i, c)| (lo + i, (*c).into()))
            .filter(|(_, c)| *c > 0)
    }

    /// Adds every answer of `other`.
    pub fn merge<D: BinCount>(&mut self, other: &LatencyBins<D>) {
        for (bin, n) in other.bins() {
            self.add(bin, n);
        }
    }

    /// Answers counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| (*c).into()).sum()
    }

    /// The `p` quantile (0 < p <= 1) in milliseconds: in the bin where the count reaches
    /// p * n, interpolated between the bin's edges (geometrically, as the bins grow; bin 0 from
    /// 0) by how far into the bin's count the rank lies. Reading the upper edge instead made
    /// neighbouring buckets jump by a whole bin (282 against 316 ms) where the latency barely
    /// moved. `None` without an answer.
    pub fn quantile_ms(&self, p: f64) -> Option<f64> {
        let rank = (p * self.count() as f64).max(f64::MIN_POSITIVE);
        let mut seen = 0.0;
        self.bins().find_map(|(bin, c)| {
            let below = seen;
            seen += c as f64;
            (seen >= rank && c > 0).then(|| {
                let f = ((rank - below) / c as f64).clamp(0.0, 1.0);
                let upper = latency_bin_upper_ms(bin);
                match bin {
                    0 => upper * f,
                    _ => {
                        let lower = latency_bin_upper_ms(bin - 1);
                        lower * (upper / lower).powf(f)
                    }
                }
            })
        })
    }

    /// Whether the bins held lie within the [`LATENCY_BINS`] there are (bins read from a
    /// shard folder).
    pub fn is_valid(&self) -> bool {
        usize::from(self.lo) + self.counts.len() <= LATENCY_BINS
    }
}

/// Neighbouring buckets' bins merged pairwise, as the buckets merge when their width doubles.
pub fn merge_pairs<C: BinCount>(buckets: &[LatencyBins<C>]) -> Vec<LatencyBins<C>> {
    buckets
        .chunks(2)
        .map(|pair| {
            let mut bins = pair[0].clone();
            if let [_, second] = pair {
                bins.merge(second);
            }
            bins
        })
        .collect()
}

/// The answers of a series' buckets per latency bin, kept only for the buckets that had
/// answers: a head per such bucket, in bucket order, and their counts in one shared vector,
/// the last bucket's at its end, so that a bucket's first answer costs no allocation and an
/// answer in the present bucket (the last) is an increment, or a few more counts at the end.
#[derive(Debug, Clone, Default)]
struct BucketBins {
    heads: Vec<Head>,
    counts: Vec<u32>,
}

/// Where a bucket's counts are in [`BucketBins::counts`].
#[derive(Debug, Clone, Copy)]
struct Head {
    bucket: u32,
    /// The first bin held, and how many.
    lo: u16,
    len: u16,
    /// Where its counts start.
    at: u32,
}

impl BucketBins {
    /// Counts an answer in bin `bin` of bucket `bucket` (< [`MAX_ROWS`]).
    #[inline(always)]
    fn add(&mut self, bucket: usize, bin: usize) {
        if let Some(h) = self.heads.last()
            && h.bucket as usize == bucket
        {
            let i = bin.wrapping_sub(usize::from(h.lo));
            if i < usize::from(h.len) {
                let c = &mut self.counts[h.at as usize + i];
                *c = c.saturating_add(1);
                return;
            }
        }
        self.add_elsewhere(bucket, bin);
    }

    /// [`BucketBins::add`] outside the last bucket's bins: a later bucket's first answer, a
    /// bin the last bucket does not hold yet (its counts are the last, so they grow in
    /// place), or an earlier bucket (settled after the fact, seldom: everything is packed
    /// again).
    #[cold]
    fn add_elsewhere(&mut self, bucket: usize, bin: usize) {
        match self.heads.last_mut() {
            Some(h) if (h.bucket as usize) > bucket => {
                let mut all = self.unpack();
                let i = all.partition_point(|(b, _)| *b < bucket);
                if all.get(i).is_none_or(|(b, _)| *b != bucket) {
                    all.insert(i, (bucket, LatencyBins::default()));
                }
                all[i].1.add(bin, 1);
                *self = BucketBins::pack(all);
            }
            Some(h) if h.bucket as usize == bucket => {
                let (lo, at) = (usize::from(h.lo), h.at as usize);
                if bin < lo {
                    self.counts.splice(at..at, std::iter::repeat_n(0, lo - bin));
                    h.lo = bin as u16;
                }
                let len = (self.counts.len() - at).max(bin - usize::from(h.lo) + 1);
                self.counts.resize(at + len, 0);
                h.len = len as u16;
                self.counts[at + bin - usize::from(h.lo)] += 1;
            }
            _ => {
                self.heads.push(Head {
                    bucket: bucket as u32,
                    lo: bin as u16,
                    len: 1,
                    at: self.counts.len() as u32,
                });
                self.counts.push(1);
            }
        }
    }

    /// Each bucket with answers, in order, with its bins.
    fn unpack(&self) -> Vec<(usize, LatencyBins)> {
        self.heads
            .iter()
            .map(|h| {
                let at = h.at as usize;
                let bins = LatencyBins {
                    lo: h.lo,
                    counts: self.counts[at..at + usize::from(h.len)].to_vec(),
                };
                (h.bucket as usize, bins)
            })
            .collect()
    }

    /// The bins of `buckets` (in increasing order of bucket, each < [`MAX_ROWS`]), packed.
    fn pack(buckets: Vec<(usize, LatencyBins)>) -> BucketBins {
        let mut packed = BucketBins::default();
        for (bucket, bins) in buckets {
            packed.heads.push(Head {
                bucket: bucket as u32,
                lo: bins.lo,
                len: bins.counts.len() as u16,
                at: packed.counts.len() as u32,
            });
            packed.counts.extend(bins.counts);
        }
        packed
    }
}

/// The time series of one replication.
#[derive(Debug, Clone)]
pub struct TimeSeries {
    bucket: SimDuration,
    /// One row per bucket up to the present; never more than [`MAX_ROWS`].
    rows: Vec<Row>,
    /// The latencies of the answers that ended in each bucket that had any.
    latency: BucketBins,
    /// Index of the bucket holding the present.
    current: usize,
    next_boundary: SimTime,
}

impl TimeSeries {
    /// An empty series with buckets of width `bucket` (> 0).
    pub fn new(bucket: SimDuration) -> Self {
        TimeSeries {
            bucket,
            rows: vec![[0; COLUMNS]],
            latency: BucketBins::default(),
            current: 0,
            next_boundary: SimTime::ZERO + bucket,
        }
    }

    /// A finished series of buckets of width `bucket` (> 0) with these rows (at least one, at
    /// most [`MAX_ROWS`]), as [`TimeSeries::rows`] gave them: for results read back from a
    /// shard folder, which checks both.
    pub fn from_rows(bucket: SimDuration, rows: Vec<Row>) -> Self {
        debug_assert!(
            !rows.is_empty() && rows.len() <= MAX_ROWS,
            "{} rows",
            rows.len()
        );
        let current = rows.len().saturating_sub(1);
        TimeSeries {
            bucket,
            next_boundary: SimTime((current as u64 + 1).saturating_mul(bucket.as_nanos())),
            rows,
            latency: BucketBins::default(),
            current,
        }
    }

    /// The series with these latencies, as [`TimeSeries::latency`] gave them; `None` unless
    /// their buckets rise and are buckets of the series and their bins exist (a shard
    /// folder's latencies).
    pub fn with_latency(mut self, latency: Vec<(usize, LatencyBins)>) -> Option<Self> {
        let rising = latency.windows(2).all(|w| w[0].0 < w[1].0);
        let inside = latency.last().is_none_or(|(b, _)| *b < self.rows.len());
        let valid = latency.iter().all(|(_, bins)| bins.is_valid());
        self.latency = BucketBins::pack(latency);
        (rising && inside && valid).then_some(self)
    }

    /// Bucket width.
    pub fn bucket(&self) -> SimDuration {
        self.bucket
    }

    /// Where the current bucket ends: [`TimeSeries::tick`] does nothing before it.
    #[inline]
    pub fn next_boundary(&self) -> SimTime {
        self.next_boundary
    }

    /// The rows so far.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The latencies of the answers that ended in each bucket: the buckets that had any, in
    /// order, each with its bins.
    pub fn latency(&self) -> Vec<(usize, LatencyBins)> {
        self.latency.unpack()
    }

    /// Moves to the bucket holding `now`; the buckets passed over get `state` as their
    /// end-of-bucket values.
    #[inline]
    pub fn tick(&mut self, now: SimTime, state: impl FnOnce() -> Gauges) {
        if now < self.next_boundary {
            return;
        }
        self.roll(now, state());
    }

    /// The index of the bucket holding `t`, merging buckets first if it lies past
    /// [`MAX_ROWS`]; the rows reach at least that far afterwards.
    fn index_of(&mut self, t: SimTime) -> usize {
        let mut i = t.as_nanos() / self.bucket.as_nanos();
        while i >= MAX_ROWS as u64 {
            self.coarsen();
            i = t.as_nanos() / self.bucket.as_nanos();
        }
        let i = i as usize;
        if self.rows.len() <= i {
            self.rows.resize(i + 1, [0; COLUMNS]);
        }
        i
    }

    #[cold]
    fn roll(&mut self, now: SimTime, state: Gauges) {
        let target = self.index_of(now);
        for row in &mut self.rows[self.current..target] {
            set_state(row, state);
        }
        self.current = target;
        self.next_boundary = SimTime((target as u64 + 1).saturating_mul(self.bucket.as_nanos()));
    }

    /// Merges neighbouring buckets pairwise, doubling the width: counts add up, states keep
    /// the later bucket's value (the state at the end of the merged bucket).
    pub fn coarsen(&mut self) {
        let merged: Vec<Row> = self
            .rows
            .chunks(2)
            .map(|pair| {
                let mut row = *pair.last().expect("chunks are never empty");
                if let [first, second] = pair {
                    for col in Column::ALL.iter().filter(|c| !c.is_state()) {
                        let i = *col as usize;
                        row[i] = first[i].saturating_add(second[i]);
                    }
                }
                row
            })
            .collect();
        self.rows = merged;
        let mut merged: Vec<(usize, LatencyBins)> = Vec::new();
        for (bucket, bins) in self.latency.unpack() {
            match merged.last_mut() {
                Some((b, into)) if *b == bucket / 2 => into.merge(&bins),
                _ => merged.push((bucket / 2, bins)),
            }
        }
        self.latency = BucketBins::pack(merged);
        self.current /= 2;
        self.bucket = SimDuration::from_nanos(self.bucket.as_nanos().saturating_mul(2));
        self.next_boundary =
            SimTime((self.current as u64 + 1).saturating_mul(self.bucket.as_nanos()));
    }

    /// Adds one to `col` in the current bucket.
    #[inline]
    pub fn add(&mut self, col: Column) {
        let row = &mut self.rows[self.current];
        row[col as usize] = row[col as usize].saturating_add(1);
    }

    /// Adds one to `col` in the bucket holding `t`, a count the driver settles after the fact
    /// (it decided at an earlier event what happens at `t`). `t` may lie in the current
    /// bucket, an earlier one or a later one; the rows reach it afterwards. In line where the
    /// rows already hold the bucket (almost always), out of line where they must grow.
    #[inline(always)]
    pub fn add_at(&mut self, t: SimTime, col: Column) {
        // `rows.len() <= MAX_ROWS`, so a bucket the rows hold needs no merging.
        let i = t.as_nanos() / self.bucket.as_nanos();
        match self.rows.get_mut(i as usize) {
            Some(row) => row[col as usize] = row[col as usize].saturating_add(1),
            None => self.add_beyond(t, col),
        }
    }

    /// [`TimeSeries::add_at`] for an instant beyond the rows.
    #[cold]
    #[inline(never)]
    fn add_beyond(&mut self, t: SimTime, col: Column) {
        let i = self.index_of(t);
        let row = &mut self.rows[i];
        row[col as usize] = row[col as usize].saturating_add(1);
    }

    /// Adds one to `a` in the bucket holding `ta` and one to `b` in the bucket holding `tb`
    /// (no earlier than `ta`), as [`TimeSeries::add_at`] twice would: both instants are
    /// settled counts (an answer and the retry it led to), each row found by one division
    /// and one bounds test, in line, and out of line only when the rows must grow.
    #[inline(always)]
    pub fn add_pair_at(&mut self, ta: SimTime, a: Column, tb: SimTime, b: Column) {
        debug_assert!(ta <= tb, "the second count comes no earlier");
        let width = self.bucket.as_nanos();
        let (i, j) = (ta.as_nanos() / width, tb.as_nanos() / width);
        // `i <= j`: when the rows hold bucket `j` they hold `i`.
        if (j as usize) < self.rows.len() {
            let row = &mut self.rows[i as usize];
            row[a as usize] = row[a as usize].saturating_add(1);
            let row = &mut self.rows[j as usize];
            row[b as usize] = row[b as usize].saturating_add(1);
            return;
        }
        self.add_at(ta, a);
        self.add_beyond(tb, b);
    }

    /// Adds one to `a` and one to `b` in the current bucket.
    #[inline(always)]
    pub fn add_pair(&mut self, a: Column, b: Column) {
        let row = &mut self.rows[self.current];
        row[a as usize] = row[a as usize].saturating_add(1);
        row[b as usize] = row[b as usize].saturating_add(1);
    }

    /// Records an answer that ended now, `latency` after it started.
    #[inline]
    pub fn answered(&mut self, latency: SimDuration) {
        self.answered_in(self.current, latency);
    }

    /// Records an answer that ended at `t`, `latency` after it started: an instant the driver
    /// settled at an earlier event, in the current bucket, an earlier one or a later one.
    #[inline(always)]
    pub fn answered_at(&mut self, t: SimTime, latency: SimDuration) {
        let i = t.as_nanos() / self.bucket.as_nanos();
        let i = if i < self.rows.len() as u64 {
            i as usize
        } else {
            self.index_of(t)
        };
        self.answered_in(i, latency);
    }

    #[inline(always)]
    fn answered_in(&mut self, i: usize, latency: SimDuration) {
        self.latency.add(i, latency_bin_of(latency.as_nanos()));
    }

    /// Closes the series with the final state.
    pub fn close(&mut self, state: Gauges) {
        for row in &mut self.rows[self.current..] {
            set_state(row, state);
        }
    }
}

fn set_state(row: &mut Row, g: Gauges) {
    row[Column::QueueLen as usize] = g.queue_len;
    row[Column::InService as usize] = g.in_service;
    row[Column::InFlight as usize] = g.in_flight;
    row[Column::BreakersOpen as usize] = g.breakers_open;
    row[Column::BudgetLevel as usize] = g.budget_level_ppm;
    row[Column::Ejected as usize] = g.ejected;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_merges_buckets_instead_of_growing() {
        let mut s = TimeSeries::new(SimDuration::from_millis(1));
        for ms in 0..(3 * MAX_ROWS as u64) {
            s.tick(SimTime(ms * 1_000_000), Gauges::default);
            s.add(Column::Attempts);
        }
        assert!(s.rows().len() <= MAX_ROWS);
        assert_eq!(s.bucket(), SimDuration::from_millis(4));
        let total: u64 = s
            .rows()
            .iter()
            .map(|r| u64::from(r[Column::Attempts as usize]))
            .sum();
        assert_eq!(total, 3 * MAX_ROWS as u64, "merging keeps every count");
    }

    /// The retries counted in each bucket of `s`.
    fn retries(s: &TimeSeries) -> Vec<u64> {
        s.rows()
            .iter()
            .map(|r| u64::from(r[Column::Retries as usize]))
            .collect()
    }

    /// Settled counts land in the bucket their instant divides into, whether it is the
    /// current one, an earlier or a later one, or past the last row a series keeps (which
    /// merges buckets first), with the present moving on.
    #[test]
    fn settled_counts_land_where_their_instant_divides() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        let bucket = 1_000u64;
        let mut s = TimeSeries::new(SimDuration::from_nanos(bucket));
        let mut counts: Vec<u64> = Vec::new();
        let mut now = 0u64;
        for _ in 0..20_000 {
            now += rng.random_range(0..300);
            s.tick(SimTime(now), Gauges::default);
            let t = match rng.random_range(0..4) {
                0 => now + rng.random_range(0..bucket),
                1 => now + rng.random_range(bucket..3 * bucket),
                2 => now.saturating_sub(rng.random_range(0..2 * bucket)),
                _ => now + rng.random_range(0..50 * bucket),
            };
            s.add_at(SimTime(t), Column::Retries);
            let i = (t / bucket) as usize;
            if counts.len() <= i {
                counts.resize(i + 1, 0);
            }
            counts[i] += 1;
        }
        let got = retries(&s);
        assert_eq!(got, counts);
        // Past the last row kept: the buckets merge twice (each row now four of the old,
        // counts added in order), and the count lands in the merged one.
        let far = SimTime(2 * MAX_ROWS as u64 * bucket + 1);
        s.add_at(far, Column::Retries);
        assert_eq!(s.bucket(), SimDuration::from_nanos(4 * bucket));
        let mut merged: Vec<u64> = counts.chunks(4).map(|c| c.iter().sum()).collect();
        let i = (far.as_nanos() / (4 * bucket)) as usize;
        merged.resize(merged.len().max(i + 1), 0);
        merged[i] += 1;
        let got = retries(&s);
        assert_eq!(got[..merged.len()], merged[..]);
        assert!(got[merged.len()..].iter().all(|&c| c == 0));
        // After the merge, counts land by the wider bucket: in rows held, and past them.
        let wide = 4 * bucket;
        for t in [
            0,
            wide - 1,
            wide,
            17 * wide + 3,
            far.as_nanos(),
            far.as_nanos() + 9 * wide,
        ] {
            s.add_at(SimTime(t), Column::Retries);
            let i = (t / wide) as usize;
            merged.resize(merged.len().max(i + 1), 0);
            merged[i] += 1;
        }
        let got = retries(&s);
        assert_eq!(got[..merged.len()], merged[..]);
        assert!(got[merged.len()..].iter().all(|&c| c == 0));
    }

    /// Answers land in their bucket's bins wherever they come (the present bucket, a later
    /// one, an earlier one, a bin below or above those held), as a plain count per bucket
    /// and bin says; merging buckets adds their bins; percentiles are bin edges.
    #[test]
    fn answers_land_in_their_buckets_bins() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(9);
        let mut s = TimeSeries::new(SimDuration::from_millis(10));
        let mut plain = vec![[0u64; LATENCY_BINS]; 400];
        let mut now = 0u64;
        for _ in 0..20_000 {
            now += rng.random_range(0..200_000);
            s.tick(SimTime(now), Gauges::default);
            let latency = SimDuration::from_nanos(
                rng.random_range(1..5_000_000_000u64) >> rng.random_range(0..30),
            );
            let at = match rng.random_range(0..8) {
                0 => now.saturating_sub(rng.random_range(0..50_000_000)),
                1 => now + rng.random_range(0..50_000_000),
                _ => now,
            };
            if at == now {
                s.answered(latency);
            } else {
                s.answered_at(SimTime(at), latency);
            }
            plain[(at / 10_000_000) as usize][super::super::latency_bin(latency.as_nanos())] += 1;
        }
        let bins_of = |s: &TimeSeries| {
            let mut out = vec![[0u64; LATENCY_BINS]; 400];
            for (b, bins) in s.latency() {
                for (bin, n) in bins.bins() {
                    out[b][bin] += n;
                }
            }
            out
        };
        assert_eq!(bins_of(&s), plain);
        s.coarsen();
        let merged: Vec<[u64; LATENCY_BINS]> = plain
            .chunks(2)
            .map(|pair| std::array::from_fn(|bin| pair[0][bin] + pair[1][bin]))
            .chain(std::iter::repeat_n([0; LATENCY_BINS], 200))
            .collect();
        assert_eq!(bins_of(&s), merged);
        // A bucket of 99 answers in one bin and one far above: p99 is the first bin's upper
        // edge, p100 the other's, and p50 lies inside the first bin, 50/99 of the way up (on
        // the log scale the bins are even on).
        let mut b = LatencyBins::<u32>::default();
        b.add(60, 99);
        b.add(120, 1);
        let (lo, hi) = (latency_bin_upper_ms(59), latency_bin_upper_ms(60));
        let p50 = b.quantile_ms(0.5).unwrap();
        assert!(
            (p50 - lo * (hi / lo).powf(50.0 / 99.0)).abs() < 1e-12 * hi,
            "{p50}"
        );
        assert!(lo < p50 && p50 < hi);
        assert!((b.quantile_ms(0.99).unwrap() - hi).abs() < 1e-12 * hi);
        assert_eq!(b.quantile_ms(1.0), Some(latency_bin_upper_ms(120)));
        assert_eq!(LatencyBins::<u32>::default().quantile_ms(0.99), None);
    }

    #[test]
    fn counts_land_in_their_bucket_and_states_carry_over() {
        let mut s = TimeSeries::new(SimDuration::from_secs(1));
        s.add(Column::Retries);
        s.tick(SimTime(3_500_000_000), || Gauges {
            queue_len: 7,
            in_service: 1,
            in_flight: 2,
            ..Gauges::default()
        });
        s.add(Column::Retries);
        s.add(Column::Retries);
        s.close(Gauges::default());
        let rows = s.rows();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0][Column::Retries as usize], 1);
        assert_eq!(rows[3][Column::Retries as usize], 2);
        assert_eq!(rows[1][Column::QueueLen as usize], 7);
        assert_eq!(rows[2][Column::InFlight as usize], 2);
        assert_eq!(rows[3][Column::QueueLen as usize], 0);
    }
}
