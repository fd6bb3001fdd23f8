//! The server's admission rate limit: a token bucket that answers `throttled`.
//!
//! The bucket starts full with `burst` tokens and refills continuously at `rate_per_s`, up to
//! `burst`. An arriving attempt takes one token or, if less than one is left, is throttled at
//! once (an HTTP 429), carrying `retry_after` when the scenario sets it.
//! Invariant: the tokens stay in [0, burst].
//!
//! The bucket counts in integers, like simulated time: tokens in units of 10^-18 of a token,
//! the rate in 10^-9 tokens per second (so one nanosecond adds exactly `rate` units) and the
//! burst in 10^-9 tokens. A token due at the very nanosecond an attempt arrives is there,
//! however the elapsed time was cut into calls; floating point would lose it to rounding.

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
    /// Units (10^-18 token) added per nanosecond: the rate in 10^-9 tokens per second.
    per_nano: u128,
    /// The bucket size in units.
    burst: u128,
    /// Tokens in the bucket, in units.
    tokens: u128,
    last: SimTime,
}

/// One token, in the bucket's units.
const TOKEN: u128 = 1_000_000_000_000_000_000;

impl RateLimiter {
    /// A full bucket.
    pub fn new(limit: RateLimit) -> Self {
        // Validation keeps both finite and far below 2^64 billionths; `as` saturates anyway.
        let billionths = |x: f64| (x * 1e9).round() as u64 as u128;
        let burst = billionths(limit.burst) * 1_000_000_000;
        RateLimiter {
            per_nano: billionths(limit.rate_per_s),
            burst,
            tokens: burst,
            last: SimTime::ZERO,
        }
    }

    /// Whether an attempt arriving at `now` (not earlier than the previous call) is admitted;
    /// an admitted attempt takes a token.
    #[inline]
    pub fn admit(&mut self, now: SimTime) -> bool {
        let elapsed = u128::from(now.saturating_since(self.last).as_nanos());
        self.last = now;
        // u64 nanoseconds times u64 billionths fits in u128.
        self.tokens = (self.tokens + elapsed * self.per_nano).min(self.burst);
        if self.tokens >= TOKEN {
            self.tokens -= TOKEN;
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

    #[test]
    fn a_token_due_when_an_attempt_arrives_is_there_however_time_was_cut() {
        // 5 tokens/s: after the only token goes at 0, the next is due at exactly 200 ms. An
        // attempt at 16 ms is throttled and splits the wait into 16 + 184 ms, which in
        // floating point adds up to 0.9999999999999999 of a token.
        let mut r = RateLimiter::new(RateLimit {
            rate_per_s: 5.0,
            burst: 1.0,
            retry_after: None,
        });
        assert!(r.admit(SimTime::ZERO));
        assert!(!r.admit(SimTime(16_000_000)));
        assert!(!r.admit(SimTime(199_999_999)), "one nanosecond early");
        assert!(r.admit(SimTime(200_000_000)), "due at 200 ms");
        // A fractional rate and burst: 2.5 tokens/s fills a bucket of 1.5 in 600 ms.
        let mut r = RateLimiter::new(RateLimit {
            rate_per_s: 2.5,
            burst: 1.5,
            retry_after: None,
        });
        assert!(r.admit(SimTime::ZERO));
        assert!(!r.admit(SimTime::ZERO), "half a token left");
        assert!(!r.admit(SimTime(199_999_999)));
        assert!(r.admit(SimTime(200_000_000)), "0.5 + 0.2 s x 2.5 = 1 token");
        let later = SimTime(10_000_000_000);
        assert!(r.admit(later), "full again: 1.5 tokens");
        assert!(!r.admit(later), "not fuller");
    }
}
