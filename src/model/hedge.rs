//! Hedged requests' state on one call edge: when the next hedge is due ([`HedgeDelay`], a
//! fixed delay or a percentile of the latencies the edge has seen) and the hedge budget.
//!
//! Plain state machines over integer nanoseconds: the driver tells them of answers and calls
//! and asks them for a delay or a permit; they schedule nothing and draw nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::SimDuration;

/// Hedges a hedge budget lets through in a burst: the most its bucket holds.
pub const HEDGE_BUDGET_BURST: f64 = 10.0;

/// How long an attempt goes unanswered on an edge before its next hedge (`policy.hedge.delay`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HedgeDelay {
    /// A fixed delay (> 0).
    Fixed(SimDuration),
    /// The `quantile` (in (0, 1)) of the latencies of the last `window` attempts answered
    /// on the call edge (`"p95"`: 0.95). No hedge is sent before the edge has seen
    /// [`HEDGE_MIN_SAMPLES`] answers.
    Percentile { quantile: f64, window: u32 },
}

/// Answers a percentile hedge delay needs before its first hedge.
pub const HEDGE_MIN_SAMPLES: u32 = 20;

/// The latencies of the last `window` attempts answered on an edge, and the quantile of them
/// that a percentile delay waits. Until the window is full the quantile follows every answer,
/// kept by two heaps split at its rank (logarithmic in the answers so far, so a window of
/// millions fills in linear-logarithmic time); once it is full the quantile is recomputed
/// after every `window / 16` new answers by a selection over the ring, so its cost per answer
/// stays constant while it follows the window closely.
#[derive(Debug, Clone)]
pub struct LatencyWindow {
    quantile: f64,
    /// Ring of the last latencies, in nanoseconds.
    ring: Vec<u64>,
    window: usize,
    /// Where the next latency goes once the ring is full.
    next: usize,
    /// Answers since the quantile was last computed.
    since: usize,
    /// The quantile of the ring when last computed; `None` before [`HEDGE_MIN_SAMPLES`].
    current: Option<SimDuration>,
    /// Scratch space for the selection.
    scratch: Vec<u64>,
    /// While the window fills: every latency so far, split at the quantile's rank.
    filling: Option<RankSplit>,
}

/// A growing multiset of latencies split at a rank: the `rank + 1` smallest in a max-heap,
/// the rest in a min-heap, so the value at the rank is the top of the first. Inserting is
/// logarithmic, and the rank may move by any amount between inserts.
#[derive(Debug, Clone, Default)]
struct RankSplit {
    low: BinaryHeap<u64>,
    high: BinaryHeap<Reverse<u64>>,
}

impl RankSplit {
    /// Inserts `x`, then returns the value at 0-based `rank` (< the values held).
    fn insert_and_get(&mut self, x: u64, rank: usize) -> u64 {
        match self.low.peek() {
            Some(&top) if x > top => self.high.push(Reverse(x)),
            _ => self.low.push(x),
        }
        while self.low.len() > rank + 1 {
            let top = self.low.pop().expect("low is longer than rank + 1");
            self.high.push(Reverse(top));
        }
        while self.low.len() < rank + 1 {
            let Reverse(least) = self.high.pop().expect("rank < the values held");
            self.low.push(least);
        }
        *self.low.peek().expect("rank + 1 >= 1 values")
    }
}

impl LatencyWindow {
    /// An empty window of `window` (>= 1) latencies tracking quantile `quantile` in (0, 1).
    pub fn new(quantile: f64, window: u32) -> Self {
        LatencyWindow {
            quantile,
            ring: Vec::new(),
            window: window as usize,
            next: 0,
            since: 0,
            current: None,
            scratch: Vec::new(),
            filling: Some(RankSplit::default()),
        }
    }

    /// The 0-based rank of the quantile among `n` (>= 1) latencies: the smallest latency at
    /// least `quantile` of them do not exceed.
    fn rank(&self, n: usize) -> usize {
        ((self.quantile * n as f64).ceil() as usize).clamp(1, n) - 1
    }

    /// An attempt was answered after `latency`.
    pub fn record(&mut self, latency: SimDuration) {
        let nanos = latency.as_nanos();
        let mut split_value = None;
        if self.ring.len() < self.window {
            self.ring.push(nanos);
            let rank = self.rank(self.ring.len());
            split_value = self.filling.as_mut().map(|f| f.insert_and_get(nanos, rank));
        } else {
            self.ring[self.next] = nanos;
            self.next = (self.next + 1) % self.window;
        }
        self.since += 1;
        let full = self.ring.len() == self.window;
        if full {
            self.filling = None;
        }
        if self.ring.len() >= HEDGE_MIN_SAMPLES as usize
            && (!full || self.since >= (self.window / 16).max(1))
        {
            self.since = 0;
            let q = match split_value.filter(|_| !full) {
                Some(q) => q,
                None => self.select(),
            };
            self.current = Some(SimDuration::from_nanos(q));
        }
    }

    /// The quantile of the ring, by a selection over a copy of it.
    fn select(&mut self) -> u64 {
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.ring);
        let rank = self.rank(self.scratch.len());
        *self.scratch.select_nth_unstable(rank).1
    }

    /// The current quantile, once enough answers have been seen.
    pub fn current(&self) -> Option<SimDuration> {
        self.current
    }
}

/// How long an attempt goes unanswered on an edge before its next hedge.
#[derive(Debug, Clone)]
pub enum HedgeTimer {
    Fixed(SimDuration),
    Percentile(LatencyWindow),
}

impl HedgeTimer {
    /// The timer of a hedge `delay`.
    pub fn new(delay: HedgeDelay) -> Self {
        match delay {
            HedgeDelay::Fixed(d) => HedgeTimer::Fixed(d),
            HedgeDelay::Percentile { quantile, window } => {
                HedgeTimer::Percentile(LatencyWindow::new(quantile, window))
            }
        }
    }

    /// The delay now, or `None` while a percentile has too few answers to go by.
    #[inline]
    pub fn delay(&self) -> Option<SimDuration> {
        match self {
            HedgeTimer::Fixed(d) => Some(*d),
            HedgeTimer::Percentile(w) => w.current(),
        }
    }

    /// Whether it learns from answers.
    #[inline]
    pub fn learns(&self) -> bool {
        matches!(self, HedgeTimer::Percentile(_))
    }

    /// An attempt on the edge was answered after `latency`.
    #[inline]
    pub fn record(&mut self, latency: SimDuration) {
        if let HedgeTimer::Percentile(w) = self {
            w.record(latency);
        }
    }
}

/// A hedge budget: each call puts `ratio` into a bucket that holds at most
/// [`HEDGE_BUDGET_BURST`]; a hedge takes 1. Over any stretch of time, hedges are at most
/// `ratio` times the calls plus the burst. It starts empty. Counted in millionths of a hedge,
/// so that the share is exact.
#[derive(Debug, Clone)]
pub struct HedgeBudget {
    ratio: u64,
    tokens: u64,
    /// Hedges it refused.
    pub denied: u64,
}

impl HedgeBudget {
    /// An empty budget of `ratio` hedges per call.
    pub fn new(ratio: f64) -> Self {
        HedgeBudget {
            ratio: (ratio * MICROS as f64).round() as u64,
            tokens: 0,
            denied: 0,
        }
    }

    /// A call started.
    #[inline]
    pub fn call_started(&mut self) {
        self.tokens = (self.tokens + self.ratio).min(HEDGE_BUDGET_BURST as u64 * MICROS);
    }

    /// Whether a hedge may be sent (it then takes its token).
    pub fn try_hedge(&mut self) -> bool {
        if self.tokens >= MICROS {
            self.tokens -= MICROS;
            true
        } else {
            self.denied += 1;
            false
        }
    }
}

/// Millionths in one hedge.
const MICROS: u64 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    #[test]
    fn a_percentile_waits_for_enough_answers_then_follows_the_window() {
        let mut w = LatencyWindow::new(0.95, 100);
        for i in 1..HEDGE_MIN_SAMPLES {
            w.record(ms(u64::from(i)));
            assert_eq!(w.current(), None, "{i} answers are too few");
        }
        w.record(ms(20));
        // 20 answers of 1..=20 ms: the 95th percentile is the 19th.
        assert_eq!(w.current(), Some(ms(19)));
        for i in 21..=100 {
            w.record(ms(i));
        }
        assert_eq!(w.current(), Some(ms(95)), "1..=100 ms: p95 is 95 ms");
        // The window slides: 100 answers of 1000 ms push the old ones out.
        for _ in 0..100 {
            w.record(ms(1000));
        }
        assert_eq!(w.current(), Some(ms(1000)));
    }

    #[test]
    fn the_quantile_matches_a_sort_of_the_window_whenever_it_is_recomputed() {
        let mut w = LatencyWindow::new(0.9, 64);
        let mut all = Vec::new();
        let mut x: u64 = 12345;
        for i in 0..1000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 40) % 10_000;
            all.push(v);
            w.record(SimDuration::from_nanos(v));
            // Recomputed at every answer until the window is full (64 answers, the last at
            // i = 63), then after every 4 (64 / 16).
            if i >= 66 && (i - 66) % 4 == 0 {
                let mut last: Vec<u64> = all[all.len() - 64..].to_vec();
                last.sort_unstable();
                let rank = (0.9f64 * 64.0).ceil() as usize - 1;
                assert_eq!(
                    w.current(),
                    Some(SimDuration::from_nanos(last[rank])),
                    "at {i}"
                );
            }
        }
    }

    /// While the window fills, the quantile is that of a sort of every answer so far, and a
    /// window of a million fills in linear-logarithmic time (a selection per answer took
    /// minutes for 200,000 answers).
    #[test]
    fn a_large_window_follows_every_answer_while_it_fills() {
        let mut w = LatencyWindow::new(0.99, 1_000_000);
        let mut all = Vec::new();
        let mut x: u64 = 99;
        for i in 0..200_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 33) % 1_000_000;
            all.push(v);
            w.record(SimDuration::from_nanos(v));
            if i % 9_973 == 19 || i == 199_999 {
                let mut sorted = all.clone();
                sorted.sort_unstable();
                let rank = ((0.99 * sorted.len() as f64).ceil() as usize) - 1;
                assert_eq!(
                    w.current(),
                    Some(SimDuration::from_nanos(sorted[rank])),
                    "at {i}"
                );
            }
        }
    }

    #[test]
    fn a_budget_allows_its_share_and_a_bounded_burst() {
        let mut b = HedgeBudget::new(0.05);
        let mut hedges = 0;
        for _ in 0..10_000 {
            b.call_started();
            if b.try_hedge() {
                hedges += 1;
            }
        }
        assert_eq!(hedges, 500, "5 % of 10,000 calls");
        // A long quiet stretch fills the bucket only up to the burst.
        let mut b = HedgeBudget::new(1.0);
        for _ in 0..1000 {
            b.call_started();
        }
        let burst = (0..100).filter(|_| b.try_hedge()).count();
        assert_eq!(burst as f64, HEDGE_BUDGET_BURST);
        assert_eq!(b.denied, 100 - burst as u64);
    }
}
