//! Client-side adaptive throttling, as in Google's SRE book ("Handling Overload", Beyer et al.
//! 2016): a client keeps, over a sliding window, the requests it tried and the ones the
//! backend accepted, and rejects a new request locally with probability
//! max(0, (requests - K * accepts) / (requests + 1)). When the backend accepts everything the
//! probability is 0 (for K >= 1); when it refuses, the client sends about K times what the
//! backend accepts and rejects the rest itself, at no cost to the backend.
//!
//! The window is a ring of [`BUCKETS`] buckets of `window / BUCKETS` each, advanced by
//! simulated time: a count older than the window leaves it a whole bucket at a time. Counts
//! are integers, K is held in millionths, and the rejection is decided by an integer draw, so
//! the probability is applied exactly.

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::engine::{SimDuration, SimTime};

/// Buckets in the window's ring.
pub const BUCKETS: usize = 60;

/// K's unit: K is held as an integer number of millionths.
pub const K_SCALE: u64 = 1_000_000;

/// One client's adaptive throttle.
#[derive(Debug, Clone)]
pub struct Throttle {
    /// K in millionths (>= [`K_SCALE`]).
    k_micros: u64,
    /// Width of a bucket in nanoseconds (>= 1).
    width: u64,
    /// Requests per bucket.
    requests: [u32; BUCKETS],
    /// Accepts per bucket.
    accepts: [u32; BUCKETS],
    /// Requests in the window.
    total_requests: u64,
    /// Accepts in the window.
    total_accepts: u64,
    /// The index (time / width) of the newest bucket counted.
    current: u64,
    /// Requests rejected locally so far.
    pub rejected: u64,
}

impl Throttle {
    /// A throttle with multiplier `k_micros` (K in millionths, at least 1) over `window`
    /// (at least [`BUCKETS`] ns).
    pub fn new(k_micros: u64, window: SimDuration) -> Self {
        Throttle {
            k_micros,
            width: (window.as_nanos() / BUCKETS as u64).max(1),
            requests: [0; BUCKETS],
            accepts: [0; BUCKETS],
            total_requests: 0,
            total_accepts: 0,
            current: 0,
            rejected: 0,
        }
    }

    /// Moves the window to `now`: buckets that fell out of it are emptied.
    fn advance(&mut self, now: SimTime) {
        let index = now.as_nanos() / self.width;
        if index <= self.current {
            return;
        }
        let gone = (index - self.current).min(BUCKETS as u64);
        for step in 1..=gone {
            let b = ((self.current + step) % BUCKETS as u64) as usize;
            self.total_requests -= u64::from(self.requests[b]);
            self.total_accepts -= u64::from(self.accepts[b]);
            self.requests[b] = 0;
            self.accepts[b] = 0;
        }
        self.current = index;
    }

    /// The rejection probability now as a fraction (numerator, denominator), numerator 0
    /// when no request would be rejected: (requests - K * accepts) / (requests + 1).
    pub fn probability(&mut self, now: SimTime) -> (u64, u64) {
        self.advance(now);
        let requests = u128::from(self.total_requests) * u128::from(K_SCALE);
        let allowed = u128::from(self.total_accepts) * u128::from(self.k_micros);
        let den = (u128::from(self.total_requests) + 1) * u128::from(K_SCALE);
        // requests + 1 < 2^64 and K_SCALE < 2^20, so both fit a u64 after the subtraction.
        (requests.saturating_sub(allowed) as u64, den as u64)
    }

    /// A request is tried now: counted, and rejected locally (false) with the current
    /// probability, drawn from `rng` (nothing is drawn while the probability is 0).
    pub fn admit(&mut self, now: SimTime, rng: &mut Pcg64) -> bool {
        let (num, den) = self.probability(now);
        let b = (self.current % BUCKETS as u64) as usize;
        self.requests[b] += 1;
        self.total_requests += 1;
        let reject = num > 0 && rng.random_range(0..den) < num;
        if reject {
            self.rejected += 1;
        }
        !reject
    }

    /// The backend accepted a request now.
    pub fn accepted(&mut self, now: SimTime) {
        self.advance(now);
        let b = (self.current % BUCKETS as u64) as usize;
        self.accepts[b] += 1;
        self.total_accepts += 1;
    }

    /// (requests, accepts) in the window as of the last time it moved.
    pub fn counts(&self) -> (u64, u64) {
        (self.total_requests, self.total_accepts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn at(ms: u64) -> SimTime {
        SimTime(ms * 1_000_000)
    }

    /// A 60 s window: buckets of 1 s.
    fn minute(k: f64) -> Throttle {
        Throttle::new(
            (k * K_SCALE as f64).round() as u64,
            SimDuration::from_secs(60),
        )
    }

    #[test]
    fn probability_is_the_sre_formula_exactly() {
        let mut t = minute(2.0);
        let mut rng = Pcg64::seed_from_u64(1);
        assert_eq!(t.probability(at(0)).0, 0, "an empty window rejects nothing");
        // 10 requests, 3 accepted: (10 - 6) / 11.
        for i in 0..10 {
            // The probability stays 0 while requests <= 2 * accepts, so nothing is drawn.
            t.requests[0] += 1;
            t.total_requests += 1;
            if i < 3 {
                t.accepted(at(0));
            }
        }
        assert_eq!(t.probability(at(500)), (4 * K_SCALE, 11 * K_SCALE));
        // K = 1.1 in millionths: (10 - 3.3) / 11.
        let mut t = minute(1.1);
        t.requests[0] = 10;
        t.total_requests = 10;
        t.accepts[0] = 3;
        t.total_accepts = 3;
        assert_eq!(t.probability(at(0)), (6_700_000, 11_000_000));
        // Everything accepted: never a rejection, with K = 1 as well.
        let mut t = minute(1.0);
        for _ in 0..1000 {
            assert!(t.admit(at(10), &mut rng));
            t.accepted(at(10));
        }
        assert_eq!(t.probability(at(10)).0, 0);
        assert_eq!(t.rejected, 0);
    }

    #[test]
    fn counts_leave_the_window_a_bucket_at_a_time() {
        let mut t = minute(2.0);
        let mut rng = Pcg64::seed_from_u64(2);
        t.admit(at(0), &mut rng);
        t.admit(at(999), &mut rng);
        t.admit(at(1000), &mut rng);
        t.accepted(at(30_000));
        assert_eq!(t.counts(), (3, 1));
        // Bucket 0 (two requests) is still in the window at 59.999 s, gone at 60 s.
        t.probability(at(59_999));
        assert_eq!(t.counts(), (3, 1));
        t.probability(at(60_000));
        assert_eq!(t.counts(), (1, 1));
        t.probability(at(61_000));
        assert_eq!(t.counts(), (0, 1));
        t.probability(at(90_000));
        assert_eq!(t.counts(), (0, 0));
        // A long silence empties the window at once, and counting starts again.
        t.admit(at(10_000_000), &mut rng);
        assert_eq!(t.counts(), (1, 0));
        // Time standing still or a count at an earlier bucket's instant moves nothing.
        t.accepted(at(10_000_000));
        assert_eq!(t.counts(), (1, 1));
    }

    /// With nothing accepted the rejection probability is requests / (requests + 1): over
    /// many requests nearly all are rejected, and the share of rejections in a stretch of
    /// n requests after the first m follows the formula within its binomial bound.
    #[test]
    fn without_accepts_the_client_rejects_almost_everything() {
        let mut t = minute(2.0);
        let mut rng = Pcg64::seed_from_u64(3);
        let n = 20_000u64;
        let mut sent = 0u64;
        for i in 0..n {
            if t.admit(at(i / 1000), &mut rng) {
                sent += 1;
            }
        }
        // Expected sent: sum of 1/(r+1) for r = 0..n-1, the harmonic number H_n ~ 10.5.
        let expected: f64 = (1..=n).map(|r| 1.0 / r as f64).sum();
        // Sent is a sum of independent Bernoullis with variance below its mean.
        let bound = 4.0 * expected.sqrt();
        assert!(
            (sent as f64 - expected).abs() < bound,
            "sent {sent}, expected {expected:.1} +- {bound:.1}"
        );
        assert_eq!(t.rejected, n - sent);
    }

    /// A backend that accepts at most one request per 10 ms (a rate limit) offered ten
    /// times that: the client settles where what it sends is K times what is accepted.
    #[test]
    fn sent_settles_at_k_times_accepted() {
        for k in [2.0, 1.1] {
            let mut t = minute(k);
            let mut rng = Pcg64::seed_from_u64(4);
            let (mut sent, mut accepted) = (0u64, 0u64);
            let mut slot_used = u64::MAX;
            // 1000 requests a second for 10 minutes, the first two a warm-up.
            for i in 0..600_000u64 {
                let now = SimTime(i * 1_000_000);
                if t.admit(now, &mut rng) {
                    let warm = i >= 120_000;
                    sent += u64::from(warm);
                    if slot_used != i / 10 {
                        slot_used = i / 10;
                        t.accepted(now);
                        accepted += u64::from(warm);
                    }
                }
            }
            let ratio = sent as f64 / accepted as f64;
            // The backend accepts 100 a second of the 1000 offered: the client sends
            // about K * 100 and rejects the rest (sent is within 2 % of K * accepted).
            assert!((ratio / k - 1.0).abs() < 0.02, "K {k}: ratio {ratio:.3}");
        }
    }
}
