//! The server's admission rate limit: a token bucket that answers `throttled`.
//!
//! The bucket starts full with `burst` tokens and refills continuously at `rate_per_s`, up to
//! `burst`. An arriving attempt takes one token or, if less than one is left, is throttled at
//! once (an HTTP 429), carrying `retry_after` when the scenario sets it.
//! Invariant: the tokens stay in [0, burst].

use crate::engine::{SimDuration, SimTime};

/// `server.rate_limit`, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Tokens added per second (>= 0).
    pub rate_per_s: f64,
    /// Bucket size (>= 1).
    pub burst: f64,
    /// The Retry-After carried by a `throttled` answer, if any.
    pub retry_after: Option<SimDuration>,
}

/// The state of the admission bucket.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    limit: RateLimit,
    tokens: f64,
    last: SimTime,
}

impl RateLimiter {
    /// A full bucket.
    pub fn new(limit: RateLimit) -> Self {
        RateLimiter {
            limit,
            tokens: limit.burst,
            last: SimTime::ZERO,
        }
    }

    /// Whether an attempt arriving at `now` (not earlier than the previous call) is admitted;
    /// an admitted attempt takes a token.
    #[inline]
    pub fn admit(&mut self, now: SimTime) -> bool {
        let elapsed = now.saturating_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.limit.rate_per_s).min(self.limit.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_holds() {
        let mut r = RateLimiter::new(RateLimit {
            rate_per_s: 10.0,
            burst: 5.0,
            retry_after: None,
        });
        let t0 = SimTime::ZERO;
        assert_eq!((0..8).filter(|_| r.admit(t0)).count(), 5, "the burst");
        // One token every 100 ms.
        assert!(!r.admit(SimTime(50_000_000)));
        assert!(r.admit(SimTime(100_000_000)));
        assert!(!r.admit(SimTime(100_000_000)));
        // After a long pause the bucket is full again, not fuller.
        let later = SimTime(60_000_000_000);
        assert_eq!((0..8).filter(|_| r.admit(later)).count(), 5);
    }
}
