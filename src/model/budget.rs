//! Retry budgets: client-side limits on how many retries there are, not when they happen.
//!
//! A budget gates retries only (a first attempt is never asked about). Four kinds, each with
//! the semantics its users know:
//! - [`BudgetKind::TokenBucket`], gRPC retry throttling: the bucket starts full; every failed
//!   attempt takes one token, every success adds `token_ratio` (up to `max_tokens`); a retry is
//!   allowed only while the tokens are above half of `max_tokens`.
//! - [`BudgetKind::RetryQuota`], the AWS SDKs' standard retry mode: a retry takes `retry_cost`
//!   (`timeout_cost` after a timeout, `throttling_cost` after a throttling error) from the
//!   quota or is denied; a success gives back what its request's last retry took, or
//!   `success_refund` when it needed no retry, never above `initial`.
//! - [`BudgetKind::Ratio`], the SRE book's, Finagle's and tower's: retries in the last `window`
//!   may not exceed `percent` times the logical requests started in it, plus
//!   `min_per_s * window`. The window slides exactly (every start and retry is kept with its
//!   time until it leaves the window), so memory follows the rate times the window.
//! - [`BudgetKind::Envoy`], an Envoy cluster's retry limit (`source/common/upstream/
//!   resource_manager_impl.h`, `RetryBudgetImpl`): a retry is allowed only while the retries
//!   in flight are fewer than the limit, which is `max_retries` (the circuit breaker) or, with
//!   a `retry_budget`, max(floor(budget_percent / 100 x active), min_retry_concurrency), where
//!   `active` counts the attempts outstanding. A retry is in flight from its decision (before
//!   its backoff) until its request's next outcome is decided or the request ends
//!   (`source/common/router/retry_state_impl.cc`: `retries().inc()` in `shouldRetry`,
//!   `dec()` in `resetRetry`, which the next `shouldRetry` and the destructor call).
//!
//! Invariants: the tokens of a bucket stay in [0, max_tokens]; a quota stays in [0, initial];
//! a ratio budget never allows more retries in any window than its allowance; an Envoy limit
//! grants a retry only when the retries in flight, that one included, are within the limit
//! worked out at that instant.

use std::collections::VecDeque;

use crate::engine::{SimDuration, SimTime};
use crate::model::Outcome;

/// The kind of budget, with its validated settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetKind {
    /// gRPC retry throttling.
    TokenBucket {
        /// Bucket size (> 0).
        max_tokens: f64,
        /// Tokens a success adds (>= 0).
        token_ratio: f64,
    },
    /// AWS SDK standard-mode retry quota.
    RetryQuota {
        /// Starting and largest quota (> 0).
        initial: f64,
        /// Cost of a retry (>= 0).
        retry_cost: f64,
        /// Cost of a retry after a timeout (>= 0).
        timeout_cost: f64,
        /// Cost of a retry after a throttling error (>= 0).
        throttling_cost: f64,
        /// Given back by a success that needed no retry (>= 0).
        success_refund: f64,
    },
    /// Retries as a fraction of recent logical requests.
    Ratio {
        /// Retries allowed per logical request started in the window (>= 0).
        percent: f64,
        /// Retries per second always allowed (>= 0).
        min_per_s: f64,
        /// Length of the sliding window (> 0).
        window: SimDuration,
    },
    /// An Envoy cluster's limit on concurrent retries.
    Envoy(EnvoyLimit),
}

/// How an Envoy cluster limits the retries in flight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EnvoyLimit {
    /// The circuit breaker's `max_retries`: at most this many at once.
    MaxRetries(u32),
    /// `retry_budget`: at most max(floor(budget_percent / 100 x active),
    /// min_retry_concurrency) at once.
    RetryBudget {
        /// Percent of the active attempts (0 to 100).
        budget_percent: f64,
        /// The limit however few attempts are active.
        min_retry_concurrency: u32,
    },
}

impl EnvoyLimit {
    /// The most retries in flight allowed while `active` attempts are outstanding: as
    /// `RetryBudgetImpl::max`, whose double converts to an integer by truncation.
    pub fn limit(self, active: u64) -> u64 {
        match self {
            EnvoyLimit::MaxRetries(n) => u64::from(n),
            EnvoyLimit::RetryBudget {
                budget_percent,
                min_retry_concurrency,
            } => ((budget_percent / 100.0 * active as f64) as u64)
                .max(u64::from(min_retry_concurrency)),
        }
    }
}

/// Who shares one budget or breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every client has its own.
    PerClient,
    /// All clients share one.
    Shared,
}

impl Scope {
    /// How many instances `clients` clients need.
    pub fn instances(self, clients: u32) -> usize {
        match self {
            Scope::PerClient => clients as usize,
            Scope::Shared => 1,
        }
    }

    /// The instance that `client` uses.
    #[inline]
    pub fn index(self, client: u32) -> usize {
        match self {
            Scope::PerClient => client as usize,
            Scope::Shared => 0,
        }
    }

    /// The word used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Scope::PerClient => "per_client",
            Scope::Shared => "shared",
        }
    }
}

/// `policy.budget`, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetConfig {
    /// The kind and its settings.
    pub kind: BudgetKind,
    /// Per client or shared.
    pub scope: Scope,
}

/// The state of one budget.
#[derive(Debug, Clone)]
pub struct Budget {
    kind: BudgetKind,
    /// Tokens (token bucket) or quota (retry quota); unused by a ratio budget.
    level: f64,
    /// Ratio: start times of the logical requests in the window, oldest first.
    starts: VecDeque<SimTime>,
    /// Ratio: send decisions of the retries in the window, oldest first.
    retries: VecDeque<SimTime>,
    /// Envoy: attempts outstanding (sent, and their caller still waits).
    active: u64,
    /// Envoy: retries in flight (decided, and their request's next outcome not yet decided).
    in_flight: u64,
}

impl Budget {
    /// A full budget.
    pub fn new(kind: BudgetKind) -> Self {
        let level = match kind {
            BudgetKind::TokenBucket { max_tokens, .. } => max_tokens,
            BudgetKind::RetryQuota { initial, .. } => initial,
            BudgetKind::Ratio { .. } | BudgetKind::Envoy(_) => 0.0,
        };
        Budget {
            kind,
            level,
            starts: VecDeque::new(),
            retries: VecDeque::new(),
            active: 0,
            in_flight: 0,
        }
    }

    /// Whether the budget counts attempts and retries in flight (an Envoy limit), and so
    /// must hear when each attempt is sent and over and when each retry it granted is over.
    #[inline]
    pub fn counts_in_flight(&self) -> bool {
        matches!(self.kind, BudgetKind::Envoy(_))
    }

    /// An attempt was sent (counted by an Envoy limit).
    #[inline]
    pub fn attempt_sent(&mut self) {
        if self.counts_in_flight() {
            self.active += 1;
        }
    }

    /// The caller stopped waiting for an attempt sent: answered, timed out or abandoned.
    #[inline]
    pub fn attempt_ended(&mut self) {
        if self.counts_in_flight() {
            debug_assert!(self.active > 0, "an attempt ended that was never sent");
            self.active = self.active.saturating_sub(1);
        }
    }

    /// A retry the budget granted is over: its request's next outcome is being decided, or
    /// the request ended.
    #[inline]
    pub fn retry_ended(&mut self) {
        debug_assert!(self.in_flight > 0, "a retry ended that was never granted");
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Envoy: attempts outstanding and retries in flight now. Tests read them; the run
    /// never needs them.
    #[cfg(test)]
    pub fn in_flight(&self) -> (u64, u64) {
        (self.active, self.in_flight)
    }

    /// A logical request starts at `now` (a ratio budget's deposit).
    #[inline]
    pub fn request_started(&mut self, now: SimTime) {
        if let BudgetKind::Ratio { window, .. } = self.kind {
            self.starts.push_back(now);
            evict(&mut self.starts, now, window);
        }
    }

    /// An attempt failed with an outcome the policy retries (a token bucket pays one token).
    #[inline]
    pub fn attempt_failed(&mut self) {
        if let BudgetKind::TokenBucket { .. } = self.kind {
            self.level = (self.level - 1.0).max(0.0);
        }
    }

    /// An attempt succeeded. `last_retry_cost` is what the request's last retry took from a
    /// retry quota (`None` when the request needed no retry).
    #[inline]
    pub fn attempt_succeeded(&mut self, last_retry_cost: Option<f64>) {
        match self.kind {
            BudgetKind::TokenBucket {
                max_tokens,
                token_ratio,
            } => self.level = (self.level + token_ratio).min(max_tokens),
            BudgetKind::RetryQuota {
                initial,
                success_refund,
                ..
            } => {
                self.level = (self.level + last_retry_cost.unwrap_or(success_refund)).min(initial);
            }
            BudgetKind::Ratio { .. } | BudgetKind::Envoy(_) => {}
        }
    }

    /// Asks at `now` for a retry after a failed attempt that ended `after`. Returns `None` if
    /// the budget denies it, else what the retry took (the quota's cost; 0 for the other
    /// kinds). An Envoy limit counts an attempt the service answered as still active when it
    /// decides (Envoy decides on the response headers, before it resets the stream), and a
    /// timed-out one as over (a per-try timeout resets the stream first).
    pub fn try_retry(&mut self, now: SimTime, after: Outcome) -> Option<f64> {
        match self.kind {
            BudgetKind::TokenBucket { max_tokens, .. } => {
                (self.level > max_tokens / 2.0).then_some(0.0)
            }
            BudgetKind::RetryQuota {
                retry_cost,
                timeout_cost,
                throttling_cost,
                ..
            } => {
                let cost = match after {
                    Outcome::Timeout => timeout_cost,
                    Outcome::Throttled => throttling_cost,
                    _ => retry_cost,
                };
                if self.level < cost {
                    return None;
                }
                self.level -= cost;
                Some(cost)
            }
            BudgetKind::Ratio { window, .. } => {
                evict(&mut self.starts, now, window);
                evict(&mut self.retries, now, window);
                if (self.retries.len() + 1) as f64 > self.allowance() {
                    return None;
                }
                self.retries.push_back(now);
                Some(0.0)
            }
            BudgetKind::Envoy(limit) => {
                let answered = u64::from(answered_by_service(after));
                if self.in_flight >= limit.limit(self.active + answered) {
                    return None;
                }
                self.in_flight += 1;
                Some(0.0)
            }
        }
    }

    /// Retries a ratio budget allows in one window with the starts it holds now.
    fn allowance(&self) -> f64 {
        match self.kind {
            BudgetKind::Ratio {
                percent,
                min_per_s,
                window,
            } => percent * self.starts.len() as f64 + min_per_s * window.as_secs_f64(),
            _ => 0.0,
        }
    }

    /// How full the budget is at `now`, in [0, 1]: tokens over `max_tokens`, quota over
    /// `initial`, for a ratio budget the share of its window's allowance not yet used, and
    /// for an Envoy limit the share of the limit (at the attempts active now) not in flight.
    pub fn level(&self, now: SimTime) -> f64 {
        match self.kind {
            BudgetKind::TokenBucket { max_tokens, .. } => self.level / max_tokens,
            BudgetKind::RetryQuota { initial, .. } => self.level / initial,
            BudgetKind::Ratio {
                percent,
                min_per_s,
                window,
            } => {
                let within = |q: &VecDeque<SimTime>| {
                    let cut = window_start(now, window);
                    (q.len() - q.partition_point(|&t| t <= cut)) as f64
                };
                let allowance = percent * within(&self.starts) + min_per_s * window.as_secs_f64();
                if allowance <= 0.0 {
                    0.0
                } else {
                    (1.0 - within(&self.retries) / allowance).clamp(0.0, 1.0)
                }
            }
            BudgetKind::Envoy(limit) => match limit.limit(self.active) {
                0 => 0.0,
                l => (1.0 - self.in_flight as f64 / l as f64).clamp(0.0, 1.0),
            },
        }
    }

    /// Tokens or quota now (0 for a ratio budget). Tests read it to check the state; the run never needs it.
    #[cfg(test)]
    pub fn raw_level(&self) -> f64 {
        self.level
    }
}

/// Whether an attempt that ended `outcome` was answered by its service (its stream still
/// open when Envoy decides), rather than timed out or refused before it was sent.
fn answered_by_service(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Error | Outcome::Rejected | Outcome::Throttled | Outcome::Conflict
    )
}

/// The instant before the window ending at `now`: events at or before it have left.
fn window_start(now: SimTime, window: SimDuration) -> SimTime {
    SimTime(now.as_nanos().saturating_sub(window.as_nanos()))
}

/// Drops the times that have left the window `(now - window, now]`.
fn evict(q: &mut VecDeque<SimTime>, now: SimTime, window: SimDuration) {
    if now.as_nanos() < window.as_nanos() {
        return;
    }
    let cut = window_start(now, window);
    while q.front().is_some_and(|&t| t <= cut) {
        q.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: f64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs_f64(s)
    }

    #[test]
    fn token_bucket_allows_three_retries_then_none_when_everything_fails() {
        // gRPC throttling with max_tokens 10, ratio 0.1, max_attempts 4, failure rate 1:
        // tokens 10 -> 9 (retry ok) -> 8 (ok) -> 7 (ok) -> 6 (attempts used up); the next
        // request's failure leaves 5, which is not above half: no more retries.
        let mut b = Budget::new(BudgetKind::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.1,
        });
        let mut allowed = 0;
        for _request in 0..5 {
            for attempt in 1..=4 {
                b.attempt_failed();
                if attempt == 4 || b.try_retry(SimTime::ZERO, Outcome::Error).is_none() {
                    break;
                }
                allowed += 1;
            }
        }
        assert_eq!(allowed, 3);
        assert_eq!(
            b.raw_level(),
            2.0,
            "10 - 4 failures, then one failure per request"
        );
    }

    #[test]
    fn token_bucket_successes_refill_up_to_the_top() {
        let mut b = Budget::new(BudgetKind::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.5,
        });
        for _ in 0..6 {
            b.attempt_failed();
        }
        assert_eq!(b.raw_level(), 4.0);
        assert!(
            b.try_retry(SimTime::ZERO, Outcome::Error).is_none(),
            "4 is not above 5"
        );
        for _ in 0..3 {
            b.attempt_succeeded(None);
        }
        assert_eq!(b.raw_level(), 5.5);
        assert!(b.try_retry(SimTime::ZERO, Outcome::Error).is_some());
        for _ in 0..100 {
            b.attempt_succeeded(None);
        }
        assert_eq!(b.raw_level(), 10.0);
        assert_eq!(b.level(SimTime::ZERO), 1.0);
    }

    #[test]
    fn retry_quota_pays_per_retry_and_refunds_on_success() {
        let mut b = Budget::new(BudgetKind::RetryQuota {
            initial: 20.0,
            retry_cost: 5.0,
            timeout_cost: 10.0,
            throttling_cost: 5.0,
            success_refund: 1.0,
        });
        assert_eq!(b.try_retry(SimTime::ZERO, Outcome::Error), Some(5.0));
        assert_eq!(b.try_retry(SimTime::ZERO, Outcome::Timeout), Some(10.0));
        assert_eq!(b.raw_level(), 5.0);
        assert_eq!(
            b.try_retry(SimTime::ZERO, Outcome::Timeout),
            None,
            "a timeout retry needs 10"
        );
        assert_eq!(b.try_retry(SimTime::ZERO, Outcome::Error), Some(5.0));
        assert_eq!(b.try_retry(SimTime::ZERO, Outcome::Error), None, "empty");
        b.attempt_succeeded(Some(10.0)); // gives back its last retry's cost
        assert_eq!(b.raw_level(), 10.0);
        b.attempt_succeeded(None); // no retry: the refund
        assert_eq!(b.raw_level(), 11.0);
        for _ in 0..100 {
            b.attempt_succeeded(Some(5.0));
        }
        assert_eq!(b.raw_level(), 20.0, "never above initial");
    }

    #[test]
    fn retry_quota_of_500_gives_100_retries_when_nothing_succeeds() {
        let mut b = Budget::new(BudgetKind::RetryQuota {
            initial: 500.0,
            retry_cost: 5.0,
            timeout_cost: 10.0,
            throttling_cost: 5.0,
            success_refund: 1.0,
        });
        let granted = (0..1000)
            .filter(|_| b.try_retry(SimTime::ZERO, Outcome::Error).is_some())
            .count();
        assert_eq!(granted, 100);
    }

    #[test]
    fn ratio_allows_percent_of_recent_requests_plus_the_minimum() {
        let mut b = Budget::new(BudgetKind::Ratio {
            percent: 0.1,
            min_per_s: 1.0,
            window: SimDuration::from_secs(10),
        });
        // 100 requests in the first second: allowance 0.1 * 100 + 1 * 10 = 20.
        for i in 0..100 {
            b.request_started(secs(f64::from(i) / 100.0));
        }
        let now = secs(1.0);
        let granted = (0..50)
            .filter(|_| b.try_retry(now, Outcome::Error).is_some())
            .count();
        assert_eq!(granted, 20);
        assert_eq!(b.level(now), 0.0);
        // Ten seconds later the requests and the retries have left the window: only the
        // minimum remains.
        let later = secs(11.5);
        let granted = (0..50)
            .filter(|_| b.try_retry(later, Outcome::Error).is_some())
            .count();
        assert_eq!(granted, 10);
    }

    /// The AWS SDKs' newer standard mode (aws-sdk-java-v2's `DefaultRetryStrategy`,
    /// aws-sdk-cpp's `ThrottleBasedRetryQuotaContainer`): 500 tokens, 14 a transient-error
    /// retry (timeouts included), 5 a throttling retry. From a full quota with nothing
    /// succeeding: floor(500 / 14) = 35 transient retries, or floor(500 / 5) = 100
    /// throttling ones.
    #[test]
    fn newer_standard_mode_gives_35_transient_or_100_throttling_retries() {
        let newer = BudgetKind::RetryQuota {
            initial: 500.0,
            retry_cost: 14.0,
            timeout_cost: 14.0,
            throttling_cost: 5.0,
            success_refund: 1.0,
        };
        for (after, expected) in [
            (Outcome::Error, 35),
            (Outcome::Timeout, 35),
            (Outcome::Throttled, 100),
        ] {
            let mut b = Budget::new(newer);
            let granted = (0..1000)
                .filter(|_| b.try_retry(SimTime::ZERO, after).is_some())
                .count();
            assert_eq!(granted, expected, "{after:?}");
        }
        // Mixed: 20 transient retries leave 500 - 280 = 220, which pays for 44 throttling ones.
        let mut b = Budget::new(newer);
        for _ in 0..20 {
            assert_eq!(b.try_retry(SimTime::ZERO, Outcome::Error), Some(14.0));
        }
        let throttling = (0..1000)
            .filter(|_| b.try_retry(SimTime::ZERO, Outcome::Throttled).is_some())
            .count();
        assert_eq!(throttling, 44);
    }

    #[test]
    fn envoy_limit_is_max_of_the_floor_of_the_percent_and_the_minimum() {
        let budget = EnvoyLimit::RetryBudget {
            budget_percent: 20.0,
            min_retry_concurrency: 3,
        };
        // 20 % of 0..14 active is below 3; 15 -> 3, 19 -> 3 (3.8 truncated), 20 -> 4,
        // 100 -> 20, 104 -> 20 (20.8 truncated).
        for (active, limit) in [
            (0, 3),
            (14, 3),
            (15, 3),
            (19, 3),
            (20, 4),
            (100, 20),
            (104, 20),
        ] {
            assert_eq!(budget.limit(active), limit, "{active} active");
        }
        assert_eq!(EnvoyLimit::MaxRetries(3).limit(1_000_000), 3);
    }

    #[test]
    fn envoy_counts_an_answered_attempt_as_active_and_a_timed_out_one_as_over() {
        // 20 % with no minimum: with 4 attempts out the limit is 0; with 5 it is 1.
        let mut b = Budget::new(BudgetKind::Envoy(EnvoyLimit::RetryBudget {
            budget_percent: 20.0,
            min_retry_concurrency: 0,
        }));
        for _ in 0..5 {
            b.attempt_sent();
        }
        b.attempt_ended();
        assert_eq!(
            b.try_retry(SimTime::ZERO, Outcome::Timeout),
            None,
            "4 active"
        );
        assert_eq!(
            b.try_retry(SimTime::ZERO, Outcome::Error),
            Some(0.0),
            "4 + 1"
        );
        assert_eq!(b.in_flight(), (4, 1));
        assert_eq!(
            b.try_retry(SimTime::ZERO, Outcome::Error),
            None,
            "1 in flight"
        );
        b.retry_ended();
        assert_eq!(b.try_retry(SimTime::ZERO, Outcome::Rejected), Some(0.0));
    }

    proptest! {
        #[test]
        fn levels_stay_within_bounds(ops in prop::collection::vec((0u8..4, any::<bool>()), 1..300)) {
            let kinds = [
                BudgetKind::TokenBucket { max_tokens: 10.0, token_ratio: 0.3 },
                BudgetKind::RetryQuota { initial: 50.0, retry_cost: 5.0, timeout_cost: 10.0, throttling_cost: 5.0, success_refund: 1.0 },
                BudgetKind::Ratio { percent: 0.2, min_per_s: 0.5, window: SimDuration::from_secs(2) },
                BudgetKind::Envoy(EnvoyLimit::RetryBudget { budget_percent: 20.0, min_retry_concurrency: 3 }),
            ];
            for kind in kinds {
                let mut b = Budget::new(kind);
                let mut last_cost = None;
                for (i, &(op, timeout)) in ops.iter().enumerate() {
                    let now = secs(i as f64 * 0.05);
                    match op {
                        0 => b.request_started(now),
                        1 => b.attempt_failed(),
                        2 => b.attempt_succeeded(last_cost.take()),
                        _ => last_cost = b.try_retry(now, if timeout { Outcome::Timeout } else { Outcome::Error }),
                    }
                    let level = b.level(now);
                    prop_assert!((0.0..=1.0).contains(&level), "{kind:?} level {level}");
                }
            }
        }

        /// Against a naive oracle that keeps every attempt and every retry as a set: an Envoy
        /// limit grants a retry exactly when the retries in flight are below
        /// max(floor(percent x active / 100), minimum), and after a grant the retries in
        /// flight never exceed the limit worked out at that instant; with `max_retries` they
        /// never exceed it at any instant.
        #[test]
        fn envoy_grants_exactly_what_the_limit_allows(
            ops in prop::collection::vec((0u8..5, any::<bool>()), 1..400),
            percent in 0.0f64..100.0,
            minimum in 0u32..5,
            max_retries in prop::option::of(0u32..6),
        ) {
            let limit = match max_retries {
                Some(n) => EnvoyLimit::MaxRetries(n),
                None => EnvoyLimit::RetryBudget { budget_percent: percent, min_retry_concurrency: minimum },
            };
            let mut b = Budget::new(BudgetKind::Envoy(limit));
            let (mut attempts, mut retries): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
            let mut next = 0u32;
            for &(op, timed_out) in &ops {
                match op {
                    0 | 1 => {
                        b.attempt_sent();
                        attempts.push(next);
                        next += 1;
                    }
                    2 if !attempts.is_empty() => {
                        attempts.remove(0);
                        b.attempt_ended();
                    }
                    3 if !retries.is_empty() => {
                        retries.pop();
                        b.retry_ended();
                    }
                    _ => {
                        let after = if timed_out { Outcome::Timeout } else { Outcome::Error };
                        let active = attempts.len() as f64 + if timed_out { 0.0 } else { 1.0 };
                        let oracle = match max_retries {
                            Some(n) => f64::from(n),
                            None => (percent / 100.0 * active).floor().max(f64::from(minimum)),
                        };
                        let granted = b.try_retry(SimTime::ZERO, after).is_some();
                        prop_assert_eq!(granted, (retries.len() as f64) < oracle);
                        if granted {
                            retries.push(next);
                            next += 1;
                            prop_assert!(retries.len() as f64 <= oracle);
                        }
                    }
                }
                if let Some(n) = max_retries {
                    prop_assert!(retries.len() <= n as usize);
                }
                prop_assert_eq!(b.in_flight(), (attempts.len() as u64, retries.len() as u64));
            }
        }

        #[test]
        fn a_ratio_budget_never_exceeds_its_allowance_in_any_window(
            gaps in prop::collection::vec((0u64..400, any::<bool>()), 1..400),
        ) {
            let window = SimDuration::from_secs(1);
            let (percent, min_per_s) = (0.25, 2.0);
            let mut b = Budget::new(BudgetKind::Ratio { percent, min_per_s, window });
            let mut now = SimTime::ZERO;
            let (mut starts, mut retries) = (Vec::new(), Vec::new());
            for &(gap_ms, is_start) in &gaps {
                now += SimDuration::from_millis(gap_ms);
                if is_start {
                    b.request_started(now);
                    starts.push(now);
                } else if b.try_retry(now, Outcome::Error).is_some() {
                    retries.push(now);
                    // Count by brute force over (now - window, now].
                    let inside = |v: &Vec<SimTime>| {
                        v.iter().filter(|&&t| t.as_nanos() + window.as_nanos() > now.as_nanos()).count() as f64
                    };
                    prop_assert!(inside(&retries) <= percent * inside(&starts) + min_per_s * window.as_secs_f64());
                }
            }
        }
    }
}
