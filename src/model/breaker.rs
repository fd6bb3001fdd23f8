//! Circuit breakers with Resilience4j's semantics.
//!
//! - **Closed**: every attempt passes and its result enters a sliding window (the last `n`
//!   results, or the results of the last `D`). Once the window holds at least
//!   `minimum_calls` results (for a count window, at most `n`: validation clamps it, as
//!   Resilience4j does) and
//!   the failure rate, or the slow-call rate, reaches its threshold, the breaker opens.
//! - **Open**: attempts are refused without reaching the server. The first attempt at or after
//!   `open_duration` finds the breaker half-open (the transition is lazy, as in Resilience4j
//!   without automatic transition).
//! - **Half-open**: `half_open_calls` trial attempts pass, others are refused. When that many
//!   results have come back, the breaker opens again if their failure (or slow-call) rate
//!   reaches the threshold, else it closes with an empty window.
//!
//! Mode `retries` is Brooker's retry circuit breaker: first attempts always pass (and their
//! results count), retries pass only while the breaker is closed.
//!
//! A result that comes back while the breaker is open is dropped; one that comes back while it
//! is half-open counts as a trial result, whenever its attempt was sent (as in Resilience4j).
//! What counts as a failure is the driver's call: every outcome but success and a 4xx.
//!
//! Invariant: the only transitions are closed -> open, open -> half-open, half-open -> open
//! and half-open -> closed; an open breaker refuses every attempt its mode gates.

use std::collections::VecDeque;

use crate::engine::{SimDuration, SimTime};
use crate::model::budget::Scope;

/// The sliding window of a closed breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerWindow {
    /// The last `n` results (n >= 1).
    Count(u32),
    /// The results of the last `D` (D > 0).
    Time(SimDuration),
}

/// Which attempts a breaker gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerMode {
    /// Every attempt.
    All,
    /// Retries only: first attempts always pass.
    Retries,
}

/// `policy.breaker`, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    /// The closed state's window.
    pub window: BreakerWindow,
    /// Failure rate in (0, 1] that opens the breaker.
    pub failure_rate_threshold: f64,
    /// Results the window must hold before rates are judged (>= 1, and at most `n` with a
    /// count window of `n`).
    pub minimum_calls: u32,
    /// How long the breaker stays open (> 0).
    pub open_duration: SimDuration,
    /// Trial attempts in the half-open state (>= 1).
    pub half_open_calls: u32,
    /// A slow-call rule: (attempts slower than this are slow, slow-call rate in (0, 1] that
    /// opens the breaker).
    pub slow_call: Option<(SimDuration, f64)>,
    /// Which attempts are gated.
    pub mode: BreakerMode,
    /// Per client or shared.
    pub scope: Scope,
}

/// The three states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Attempts pass; results fill the window.
    Closed,
    /// Attempts are refused.
    Open,
    /// A few trial attempts pass.
    HalfOpen,
}

#[derive(Debug, Clone, Copy)]
struct Call {
    at: SimTime,
    failed: bool,
    slow: bool,
}

/// Results counted together.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    calls: u32,
    failures: u32,
    slow: u32,
}

impl Tally {
    fn add(&mut self, failed: bool, slow: bool) {
        self.calls += 1;
        self.failures += u32::from(failed);
        self.slow += u32::from(slow);
    }

    fn remove(&mut self, call: Call) {
        self.calls -= 1;
        self.failures -= u32::from(call.failed);
        self.slow -= u32::from(call.slow);
    }

    /// Whether the failure or slow-call rate reaches its threshold.
    fn trips(&self, cfg: &BreakerConfig) -> bool {
        let calls = f64::from(self.calls.max(1));
        f64::from(self.failures) / calls >= cfg.failure_rate_threshold
            || cfg
                .slow_call
                .is_some_and(|(_, threshold)| f64::from(self.slow) / calls >= threshold)
    }
}

/// The state of one breaker.
#[derive(Debug, Clone)]
pub struct Breaker {
    cfg: BreakerConfig,
    state: BreakerState,
    /// Open: when the breaker may turn half-open.
    open_until: SimTime,
    /// Closed: the window's results, oldest first, and their tally.
    window: VecDeque<Call>,
    closed: Tally,
    /// Half-open: trial attempts let through and results come back.
    permitted: u32,
    trial: Tally,
    /// State changes so far.
    pub transitions: u64,
    /// Times the breaker opened.
    pub openings: u64,
    /// Attempts refused.
    pub refusals: u64,
    /// Open time so far, counting every opening as its full `open_duration`.
    open_nanos: u128,
}

impl Breaker {
    /// A closed breaker with an empty window.
    pub fn new(cfg: BreakerConfig) -> Self {
        Breaker {
            cfg,
            state: BreakerState::Closed,
            open_until: SimTime::ZERO,
            window: VecDeque::new(),
            closed: Tally::default(),
            permitted: 0,
            trial: Tally::default(),
            transitions: 0,
            openings: 0,
            refusals: 0,
            open_nanos: 0,
        }
    }

    /// The state as of the last call (an open breaker past its open duration stays `Open`
    /// until the next attempt asks).
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether the breaker refuses attempts at `now` (open, and its open duration not over).
    #[inline]
    pub fn is_open(&self, now: SimTime) -> bool {
        self.state == BreakerState::Open && now < self.open_until
    }

    /// Asks at `now` whether an attempt may be sent (`is_retry`: it is not the request's first).
    /// A refusal is counted.
    pub fn allow(&mut self, now: SimTime, is_retry: bool) -> bool {
        if self.state == BreakerState::Open && now >= self.open_until {
            self.state = BreakerState::HalfOpen;
            self.transitions += 1;
            self.permitted = 0;
            self.trial = Tally::default();
        }
        let first_passes = self.cfg.mode == BreakerMode::Retries && !is_retry;
        let allowed = match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => first_passes,
            BreakerState::HalfOpen if first_passes => true,
            BreakerState::HalfOpen if self.cfg.mode == BreakerMode::Retries => false,
            BreakerState::HalfOpen => {
                if self.permitted < self.cfg.half_open_calls {
                    self.permitted += 1;
                    true
                } else {
                    false
                }
            }
        };
        if !allowed {
            self.refusals += 1;
        }
        allowed
    }

    /// The result of an attempt comes back at `now`: `failed` if the policy counts it as a
    /// failure, after `took` from send to result.
    pub fn record(&mut self, now: SimTime, failed: bool, took: SimDuration) {
        let slow = self.cfg.slow_call.is_some_and(|(limit, _)| took > limit);
        match self.state {
            BreakerState::Closed => {
                let call = Call {
                    at: now,
                    failed,
                    slow,
                };
                self.window.push_back(call);
                self.closed.add(failed, slow);
                match self.cfg.window {
                    BreakerWindow::Count(n) => {
                        if self.window.len() > n as usize {
                            let old = self.window.pop_front().expect("not empty");
                            self.closed.remove(old);
                        }
                    }
                    BreakerWindow::Time(d) => {
                        while let Some(&old) = self.window.front() {
                            if old.at.as_nanos() + d.as_nanos() > now.as_nanos() {
                                break;
                            }
                            self.window.pop_front();
                            self.closed.remove(old);
                        }
                    }
                }
                if self.closed.calls >= self.cfg.minimum_calls && self.closed.trips(&self.cfg) {
                    self.open(now);
                }
            }
            BreakerState::Open => {}
            BreakerState::HalfOpen => {
                self.trial.add(failed, slow);
                if self.trial.calls >= self.cfg.half_open_calls {
                    if self.trial.trips(&self.cfg) {
                        self.open(now);
                    } else {
                        self.state = BreakerState::Closed;
                        self.transitions += 1;
                        self.window.clear();
                        self.closed = Tally::default();
                    }
                }
            }
        }
    }

    fn open(&mut self, now: SimTime) {
        self.state = BreakerState::Open;
        self.transitions += 1;
        self.openings += 1;
        self.open_until = now + self.cfg.open_duration;
        self.open_nanos += u128::from(self.cfg.open_duration.as_nanos());
        self.window.clear();
        self.closed = Tally::default();
    }

    /// Time spent open up to `end` (an opening still running at `end` counts up to `end`).
    pub fn time_open(&self, end: SimTime) -> u128 {
        let overshoot = if self.state == BreakerState::Open && self.open_until > end {
            u128::from(self.open_until.as_nanos() - end.as_nanos())
        } else {
            0
        };
        self.open_nanos.saturating_sub(overshoot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> SimTime {
        SimTime(n * 1_000_000)
    }

    const FAST: SimDuration = SimDuration::ZERO;

    fn config(window: BreakerWindow, minimum_calls: u32) -> BreakerConfig {
        BreakerConfig {
            window,
            failure_rate_threshold: 0.5,
            minimum_calls,
            open_duration: SimDuration::from_secs(60),
            half_open_calls: 10,
            slow_call: None,
            mode: BreakerMode::All,
            scope: Scope::PerClient,
        }
    }

    #[test]
    fn a_100_call_window_opens_at_50_percent_only_after_minimum_calls() {
        // Resilience4j's documented example: window of 100 calls, threshold 50 %,
        // minimum 10 calls. 9 failures out of 9 calls do not open it; the 10th does.
        let mut b = Breaker::new(config(BreakerWindow::Count(100), 10));
        for i in 0..9 {
            b.record(ms(i), true, FAST);
            assert_eq!(b.state(), BreakerState::Closed, "call {i}");
        }
        b.record(ms(9), true, FAST);
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.allow(ms(10), false), "open: refused");
        assert_eq!(b.refusals, 1);
    }

    #[test]
    fn the_rate_is_over_the_last_n_calls() {
        let mut b = Breaker::new(config(BreakerWindow::Count(100), 100));
        // 100 successes, then failures: with 49 failures among the last 100 it stays
        // closed, the 50th failure (50 of the last 100) opens it.
        for i in 0..100 {
            b.record(ms(i), false, FAST);
        }
        for i in 0..49 {
            b.record(ms(100 + i), true, FAST);
        }
        assert_eq!(b.state(), BreakerState::Closed);
        b.record(ms(149), true, FAST);
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.openings, 1);
    }

    #[test]
    fn minimum_calls_equal_to_the_count_window_opens_once_it_is_full() {
        // Validation clamps minimum_calls to the window's size; at that size the breaker
        // judges as soon as the window is full.
        let mut b = Breaker::new(config(BreakerWindow::Count(4), 4));
        for i in 0..3 {
            b.record(ms(i), true, FAST);
            assert_eq!(b.state(), BreakerState::Closed, "call {i}");
        }
        b.record(ms(3), true, FAST);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn a_time_window_forgets_old_results() {
        let mut b = Breaker::new(config(BreakerWindow::Time(SimDuration::from_secs(1)), 4));
        b.record(ms(0), true, FAST);
        b.record(ms(100), true, FAST);
        b.record(ms(200), true, FAST);
        // The three failures have left the window by t = 1.3 s.
        b.record(ms(1300), false, FAST);
        b.record(ms(1400), false, FAST);
        b.record(ms(1500), false, FAST);
        b.record(ms(1600), true, FAST);
        assert_eq!(
            b.state(),
            BreakerState::Closed,
            "1 failure of 4 in the window"
        );
        b.record(ms(1700), true, FAST);
        assert_eq!(b.state(), BreakerState::Closed, "2 of 5");
        b.record(ms(1800), true, FAST);
        assert_eq!(b.state(), BreakerState::Open, "3 of 6 reaches 50 %");
    }

    fn opened() -> Breaker {
        let mut cfg = config(BreakerWindow::Count(10), 10);
        cfg.half_open_calls = 3;
        let mut b = Breaker::new(cfg);
        for i in 0..10 {
            b.record(ms(i), true, FAST);
        }
        assert_eq!(b.state(), BreakerState::Open);
        b
    }

    #[test]
    fn half_open_lets_trials_through_and_closes_when_they_succeed() {
        let mut b = opened();
        let reopen = ms(9) + SimDuration::from_secs(60);
        assert!(!b.allow(SimTime(reopen.as_nanos() - 1), false));
        assert!(
            b.allow(reopen, false),
            "the first attempt after open_duration is a trial"
        );
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.allow(reopen, false));
        assert!(b.allow(reopen, false));
        assert!(!b.allow(reopen, false), "only 3 trials");
        b.record(reopen, false, FAST);
        b.record(reopen, false, FAST);
        assert_eq!(b.state(), BreakerState::HalfOpen, "waits for every trial");
        b.record(reopen, true, FAST);
        assert_eq!(
            b.state(),
            BreakerState::Closed,
            "1 failure of 3 is below 50 %"
        );
        assert_eq!(b.transitions, 3, "closed->open->half-open->closed");
        // The window starts empty: 9 more failures do not open it (minimum 10).
        for _ in 0..9 {
            b.record(reopen, true, FAST);
        }
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn half_open_opens_again_when_the_trials_fail() {
        let mut b = opened();
        let reopen = ms(9) + SimDuration::from_secs(60);
        for _ in 0..3 {
            assert!(b.allow(reopen, false));
        }
        b.record(reopen, true, FAST);
        b.record(reopen, false, FAST);
        b.record(reopen, true, FAST);
        assert_eq!(b.state(), BreakerState::Open, "2 of 3 failed");
        assert_eq!(b.openings, 2);
        assert!(!b.allow(reopen + SimDuration::from_secs(1), false));
        let end = reopen + SimDuration::from_secs(30);
        assert_eq!(
            b.time_open(end),
            60_000_000_000 + 30_000_000_000,
            "one full opening and half of the current one"
        );
    }

    #[test]
    fn slow_calls_open_the_breaker_too() {
        let mut cfg = config(BreakerWindow::Count(10), 10);
        cfg.slow_call = Some((SimDuration::from_secs(1), 0.8));
        let mut b = Breaker::new(cfg);
        let slow = SimDuration::from_millis(1500);
        for i in 0..3 {
            b.record(ms(i), false, FAST);
        }
        for i in 3..10 {
            b.record(ms(i), false, slow);
        }
        assert_eq!(b.state(), BreakerState::Closed, "70 % slow is below 80 %");
        b.record(ms(10), false, SimDuration::from_secs(1));
        assert_eq!(
            b.state(),
            BreakerState::Closed,
            "exactly the limit is not slow"
        );
        b.record(ms(11), false, slow);
        assert_eq!(b.state(), BreakerState::Open, "8 of the last 10 are slow");
    }

    #[test]
    fn retries_mode_passes_first_attempts_and_gates_retries_until_closed() {
        let mut cfg = config(BreakerWindow::Count(10), 10);
        cfg.mode = BreakerMode::Retries;
        cfg.half_open_calls = 2;
        let mut b = Breaker::new(cfg);
        assert!(b.allow(ms(0), true), "closed: retries pass");
        for i in 0..10 {
            b.record(ms(i), true, FAST);
        }
        assert!(b.allow(ms(10), false), "open: first attempts pass");
        assert!(!b.allow(ms(10), true), "open: retries are refused");
        let later = ms(9) + SimDuration::from_secs(60);
        assert!(b.allow(later, false));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(!b.allow(later, true), "half-open: retries still refused");
        b.record(later, false, FAST);
        b.record(later, false, FAST);
        assert_eq!(b.state(), BreakerState::Closed);
        assert!(b.allow(later, true));
    }

    proptest! {
        #[test]
        fn only_legal_transitions(ops in prop::collection::vec((0u64..3_000, any::<bool>(), any::<bool>(), any::<bool>()), 1..500)) {
            let mut cfg = config(BreakerWindow::Count(8), 5);
            cfg.open_duration = SimDuration::from_secs(1);
            cfg.half_open_calls = 2;
            cfg.slow_call = Some((SimDuration::from_millis(500), 0.9));
            let mut b = Breaker::new(cfg);
            let mut now = SimTime::ZERO;
            let mut opened_at = SimTime::ZERO;
            for &(gap_ms, ask, failed, retry) in &ops {
                now += SimDuration::from_millis(gap_ms);
                let before = b.state();
                if ask {
                    let allowed = b.allow(now, retry);
                    if before == BreakerState::Open && now < opened_at + cfg.open_duration {
                        prop_assert!(!allowed, "open breaker let an attempt through");
                        prop_assert_eq!(b.state(), BreakerState::Open, "left open too early");
                    }
                } else {
                    b.record(now, failed, SimDuration::from_millis(gap_ms));
                }
                let after = b.state();
                let legal = before == after
                    || matches!(
                        (before, after),
                        (BreakerState::Closed, BreakerState::Open)
                            | (BreakerState::Open, BreakerState::HalfOpen)
                            | (BreakerState::HalfOpen, BreakerState::Open)
                            | (BreakerState::HalfOpen, BreakerState::Closed)
                    );
                prop_assert!(legal, "{before:?} -> {after:?}");
                if after == BreakerState::Open && before != BreakerState::Open {
                    opened_at = now;
                }
            }
        }
    }
}
