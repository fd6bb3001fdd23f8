//! The client-side rate limiter of the AWS SDKs' `adaptive` retry mode, exactly as botocore
//! writes it (`botocore/retries/adaptive.py`, `bucket.py`, `throttling.py`; aws-sdk-go-v2's
//! `aws/retry` uses the same constants): a token bucket that every send takes a token from
//! once the first throttling answer has switched it on, whose fill rate CUBIC sets from the
//! answers, capped at twice the send rate a [`RateClocker`] measures.
//!
//! The state is kept in `f64` seconds as the SDK keeps it; an instant is read as
//! `nanoseconds / 1e9`. The one place a float becomes simulated time is [`whole_nanos`]: a
//! wait of `s` seconds lasts `ceil(s * 1e9)` ns. With that clock the limiter's trajectory is
//! botocore's to the bit (`bench/aws-adaptive/`, `tests/it/aws_adaptive.rs`). Not here: which
//! answers count as throttling (`sim::policy`) and what a wait does to a call (`sim::client`).
//!
//! [`TokenWait`] picks how a send without a token waits: botocore's (look again after the
//! wait), or one of two ways SDKs diverged from it before their fixes, where a send waits its
//! shortfall once and then goes whatever the bucket holds.

use crate::engine::SimTime;

/// CUBIC's scale constant C (`throttling.CubicCalculator._SCALE_CONSTANT`).
pub const CUBIC_C: f64 = 0.4;
/// CUBIC's multiplicative decrease beta (`throttling.CubicCalculator._BETA`).
pub const CUBIC_BETA: f64 = 0.7;
/// The lowest fill rate, tokens a second (`bucket.TokenBucket._MIN_RATE`).
pub const MIN_FILL_RATE: f64 = 0.5;
/// The smoothing of the measured send rate (`adaptive.RateClocker._DEFAULT_SMOOTHING`).
pub const SMOOTHING: f64 = 0.8;
/// The width of a bucket of the measured send rate, seconds (`RateClocker._TIME_BUCKET_RANGE`).
pub const TIME_BUCKET: f64 = 0.5;
/// The fill rate is at most this many times the measured send rate
/// (`ClientRateLimiter._MAX_RATE_ADJUST_SCALE`).
pub const MAX_RATE_ADJUST_SCALE: f64 = 2.0;

/// `seconds` of waiting as whole nanoseconds of simulated time, rounded up, so that a wait
/// never ends before the token it waits for has filled (at least 1 ns for any wait > 0).
#[inline]
pub fn whole_nanos(seconds: f64) -> u64 {
    (seconds * 1e9).ceil() as u64
}

/// An instant as the SDK's float seconds.
#[inline]
fn secs(t: SimTime) -> f64 {
    t.as_nanos() as f64 / 1e9
}

/// How a send that finds no token waits for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenWait {
    /// botocore's, and the SDKs' since their fixes: wait `(1 - capacity) / fill_rate`, look
    /// again, and take the token only when there is one.
    #[default]
    Recheck,
    /// aws-sdk-rust before smithy-lang/smithy-rs#4632: the token is taken at once even when
    /// short, so the capacity goes below zero and the next sends wait for the whole debt; the
    /// send goes after its wait without looking again.
    DeductBeforeWait,
    /// The JavaScript v3 SDK before smithy-lang/smithy-typescript#1973: wait the shortfall
    /// seen when asking, then go and take the token without looking again, so sends that
    /// ask together all go after the same wait.
    DeductAfterWait,
}

/// botocore's `TokenBucket`: capacity follows the fill rate (max(rate, 1) tokens).
#[derive(Debug, Clone)]
struct TokenBucket {
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    /// The instant of the last refill, ns (at or after every instant the bucket was read at).
    last: u64,
}

impl TokenBucket {
    /// `TokenBucket(max_rate=1)` made at instant 0.
    fn new() -> Self {
        TokenBucket {
            fill_rate: 1.0,
            max_capacity: 1.0,
            capacity: 0.0,
            last: 0,
        }
    }

    /// `_refill` at `t` ns (never before the last refill: simulated time does not go back).
    fn refill(&mut self, t: u64) {
        let t = t.max(self.last);
        let fill = (t as f64 / 1e9 - self.last as f64 / 1e9) * self.fill_rate;
        self.capacity = self.max_capacity.min(self.capacity + fill);
        self.last = t;
    }

    /// The `max_rate` setter.
    fn set_rate(&mut self, value: f64, t: u64) {
        self.refill(t);
        self.fill_rate = value.max(MIN_FILL_RATE);
        self.max_capacity = if value >= 1.0 { value } else { 1.0 };
        self.capacity = self.capacity.min(self.max_capacity);
    }

    /// One pass of `_acquire(1, block=True)`'s loop at `t` ns: refill, then take the token
    /// (`None`), or say when to look again (`Some(ns)`): after a wait of
    /// `(1 - capacity) / fill_rate` seconds, rounded up to whole nanoseconds.
    fn try_take(&mut self, t: u64) -> Option<u64> {
        self.refill(t);
        if 1.0 > self.capacity {
            return Some(self.last + whole_nanos((1.0 - self.capacity) / self.fill_rate));
        }
        self.capacity -= 1.0;
        None
    }
}

/// botocore's `RateClocker`: the send rate, measured per answer in half-second buckets.
#[derive(Debug, Clone)]
struct RateClocker {
    measured: f64,
    last_bucket: f64,
    count: f64,
}

impl RateClocker {
    /// `record()` at `t`: the measured rate after counting one answer.
    fn record(&mut self, t: SimTime) -> f64 {
        let scale = 1.0 / TIME_BUCKET;
        let bucket = (secs(t) * scale).floor() / scale;
        self.count += 1.0;
        if bucket > self.last_bucket {
            let current = self.count / (bucket - self.last_bucket);
            self.measured = current * SMOOTHING + self.measured * (1.0 - SMOOTHING);
            self.count = 0.0;
            self.last_bucket = bucket;
        }
        self.measured
    }
}

/// botocore's `CubicCalculator`.
#[derive(Debug, Clone)]
struct Cubic {
    w_max: f64,
    k: f64,
    last_fail: f64,
}

impl Cubic {
    fn zero_point(w_max: f64) -> f64 {
        (w_max * (1.0 - CUBIC_BETA) / CUBIC_C).powf(1.0 / 3.0)
    }

    fn success(&self, t: f64) -> f64 {
        CUBIC_C * (t - self.last_fail - self.k).powf(3.0) + self.w_max
    }

    fn error(&mut self, rate: f64, t: f64) -> f64 {
        self.w_max = rate;
        self.k = Self::zero_point(rate);
        self.last_fail = t;
        rate * CUBIC_BETA
    }
}

/// One client's adaptive-mode rate limiter (botocore's `ClientRateLimiter`), made at
/// instant 0.
#[derive(Debug, Clone)]
pub struct ClientRateLimiter {
    wait: TokenWait,
    bucket: TokenBucket,
    clocker: RateClocker,
    cubic: Cubic,
    /// Whether a throttling answer has switched the gate on (then every send takes a token).
    pub enabled: bool,
    /// Sends that waited for a token.
    pub delayed: u64,
    /// Their waits added up, ns.
    pub waited_nanos: u64,
}

impl Default for ClientRateLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientRateLimiter {
    /// A limiter as `adaptive.register_retry_handler` makes it at instant 0.
    pub fn new() -> Self {
        Self::waiting(TokenWait::Recheck)
    }

    /// A limiter at instant 0 whose sends wait for a token as `wait` says.
    pub fn waiting(wait: TokenWait) -> Self {
        ClientRateLimiter {
            wait,
            bucket: TokenBucket::new(),
            clocker: RateClocker {
                measured: 0.0,
                last_bucket: 0.0,
                count: 0.0,
            },
            cubic: Cubic {
                w_max: 0.0,
                k: Cubic::zero_point(0.0),
                last_fail: 0.0,
            },
            enabled: false,
            delayed: 0,
            waited_nanos: 0,
        }
    }

    /// One pass of `on_sending_request` at `now` for a send that has waited since `since`
    /// (`now` for a send asking the first time): `None` when it may go now (the gate is off,
    /// or it took a token), or the instant to look again, as botocore's blocked
    /// `acquire` wakes when its timed wait ends and looks again. Each waiting send looks for
    /// itself, as each of botocore's blocked threads does; a send that goes after a wait is
    /// counted in [`ClientRateLimiter::delayed`] and [`ClientRateLimiter::waited_nanos`].
    pub fn try_send(&mut self, since: SimTime, now: SimTime) -> Option<SimTime> {
        if !self.enabled {
            return None;
        }
        let woken = now > since;
        let next = match self.wait {
            TokenWait::Recheck => self.bucket.try_take(now.as_nanos()),
            // A woken send of the two older ways goes: its token is taken, or taken now.
            TokenWait::DeductBeforeWait if woken => None,
            TokenWait::DeductAfterWait if woken => {
                self.bucket.capacity -= 1.0;
                None
            }
            TokenWait::DeductBeforeWait => {
                let wait = self.bucket.try_take(now.as_nanos());
                if wait.is_some() {
                    self.bucket.capacity -= 1.0;
                }
                wait
            }
            TokenWait::DeductAfterWait => self.bucket.try_take(now.as_nanos()),
        };
        match next {
            Some(next) => Some(SimTime(next)),
            None => {
                if woken {
                    self.delayed += 1;
                    self.waited_nanos += now.as_nanos() - since.as_nanos();
                }
                None
            }
        }
    }

    /// `on_sending_request` at `now` for a lone caller: the instant the send goes, its
    /// token taken, looking again at each instant [`ClientRateLimiter::try_send`] names.
    pub fn send_at(&mut self, now: SimTime) -> SimTime {
        let mut at = now;
        while let Some(next) = self.try_send(now, at) {
            at = next;
        }
        at
    }

    /// `on_receiving_response` at `now`, for an answer that was (`throttling`) or was not a
    /// throttling error.
    pub fn answered(&mut self, throttling: bool, now: SimTime) {
        let measured = self.clocker.record(now);
        let t = secs(now);
        let new_rate = if throttling {
            let rate = if self.enabled {
                measured.min(self.bucket.fill_rate)
            } else {
                measured
            };
            self.enabled = true;
            self.cubic.error(rate, t)
        } else {
            self.cubic.success(t)
        };
        self.bucket.set_rate(
            new_rate.min(MAX_RATE_ADJUST_SCALE * measured),
            now.as_nanos(),
        );
    }

    /// The bucket's fill rate, tokens a second (botocore's `max_rate`).
    pub fn fill_rate(&self) -> f64 {
        self.bucket.fill_rate
    }

    /// The measured send rate, requests a second.
    pub fn measured_rate(&self) -> f64 {
        self.clocker.measured
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_is_off_until_the_first_throttle() {
        let mut l = ClientRateLimiter::new();
        for i in 0..100 {
            let t = SimTime(i * 1_000_000);
            assert_eq!(l.send_at(t), t);
            l.answered(false, t);
        }
        assert!(!l.enabled);
        l.answered(true, SimTime(100_000_000));
        assert!(l.enabled);
        assert!(l.fill_rate() >= MIN_FILL_RATE);
    }

    #[test]
    fn a_throttle_cuts_the_rate_to_beta_times_the_measured_rate() {
        let mut l = ClientRateLimiter::new();
        // 10 answers a second for 3 s, then a throttle.
        for i in 0..30 {
            l.answered(false, SimTime(i * 100_000_000));
        }
        let measured = l.measured_rate();
        l.answered(true, SimTime(3_000_000_000));
        let m = l.measured_rate();
        assert!(measured > 0.0);
        assert_eq!(l.fill_rate(), (m * CUBIC_BETA).max(MIN_FILL_RATE));
    }

    /// A limiter switched on at instant 0 whose bucket fills at 1 token a second, holding
    /// none, that waits as `wait` says.
    fn one_a_second(wait: TokenWait) -> ClientRateLimiter {
        let mut l = ClientRateLimiter::waiting(wait);
        l.enabled = true;
        l.bucket.set_rate(1.0, 0);
        l
    }

    /// The instants three sends asking at instant 0 go at, the rate raised to 4/s at 0.5 s,
    /// and then the instant a fourth send asking at 1.5 s goes at; each waiting send looks
    /// again at the instant it was told, in order.
    fn three_then_one(wait: TokenWait) -> (Vec<f64>, f64) {
        let mut l = one_a_second(wait);
        let mut waiting: Vec<(SimTime, SimTime)> =
            (0..3).map(|_| (SimTime(0), SimTime(0))).collect();
        let mut went = Vec::new();
        let mut raised = false;
        while !waiting.is_empty() {
            waiting.sort_by_key(|(_, at)| *at);
            let (since, at) = waiting.remove(0);
            if !raised && at >= SimTime(500_000_000) {
                l.bucket.set_rate(4.0, 500_000_000);
                raised = true;
            }
            match l.try_send(since, at) {
                None => went.push(secs(at)),
                Some(next) => waiting.push((since, next)),
            }
        }
        let fourth = SimTime(1_500_000_000);
        let mut at = fourth;
        while let Some(next) = l.try_send(fourth, at) {
            at = next;
        }
        (went, secs(at))
    }

    #[test]
    fn each_way_of_waiting_for_a_token_goes_when_counted_by_hand() {
        // botocore: at 0 s each of the three finds 0 tokens and waits (1 - 0) / 1 = 1 s. The
        // rate is 4/s from 0.5 s, so at 1 s the bucket holds 0.5 + 0.5 x 4 = 2.5: two go, the
        // third finds 0.5 and waits (1 - 0.5) / 4 = 0.125 s. At 1.5 s the bucket holds
        // 0.375 x 4 = 1.5: the fourth goes at once.
        let (went, fourth) = three_then_one(TokenWait::Recheck);
        assert_eq!(went, vec![1.0, 1.0, 1.125]);
        assert_eq!(fourth, 1.5);
        // smithy-rs before #4632: the three take their tokens at 0 s, leaving 0, -1, -2, and
        // wait 1, 2 and 3 s whatever the rate does later. At 1.5 s the bucket holds
        // -3 + 0.5 x 1 + 1.0 x 4 = 1.5: the fourth goes at once.
        let (went, fourth) = three_then_one(TokenWait::DeductBeforeWait);
        assert_eq!(went, vec![1.0, 2.0, 3.0]);
        assert_eq!(fourth, 1.5);
        // smithy-typescript before #1973: all three see 0 tokens, wait 1 s and go together
        // without a refill, leaving 0.5 - 3 = -2.5 as of 0.5 s; at 1.5 s the bucket holds
        // -2.5 + 1.0 x 4 = 1.5: the fourth goes at once. Three sends went in the first second
        // of a 1/s bucket.
        let (went, fourth) = three_then_one(TokenWait::DeductAfterWait);
        assert_eq!(went, vec![1.0, 1.0, 1.0]);
        assert_eq!(fourth, 1.5);
    }

    #[test]
    fn a_debt_makes_later_sends_wait_for_it_all() {
        // smithy-rs before #4632: 50 sends asking at once of a 1/s bucket holding none take
        // their tokens at once, the i-th waiting (1 - (-i)) / 1 = i + 1 s and leaving -50. A
        // send asking at 10 s finds -50 + 10 = -40 and waits 41 s, to 51 s: the cascade
        // smithy-rs#4632 describes ("task 50 sleeping 100s").
        let mut l = one_a_second(TokenWait::DeductBeforeWait);
        for i in 0..50u64 {
            assert_eq!(
                l.try_send(SimTime(0), SimTime(0)),
                Some(SimTime((i + 1) * 1_000_000_000))
            );
        }
        let late = SimTime(10_000_000_000);
        assert_eq!(l.try_send(late, late), Some(SimTime(51_000_000_000)));
    }

    #[test]
    fn waits_are_whole_nanoseconds_rounded_up() {
        assert_eq!(whole_nanos(1e-9), 1);
        assert_eq!(whole_nanos(0.5), 500_000_000);
        assert_eq!(whole_nanos(1.0000000001e-9), 2);
    }
}
