//! The per-call policies of one call edge, called through one pipeline: every policy that
//! watches or gates a call (retry budget, circuit breaker, bulkhead, hedging) is asked here, in
//! a fixed order, and nowhere else. A new per-call policy is a field of [`CallPolicies`] and a line in
//! each step it takes part in.
//!
//! The steps, in the order a call meets them:
//! 1. [`CallPolicies::call_started`]: a logical call starts (a retry budget's and a hedge
//!    budget's deposits).
//! 2. [`CallPolicies::admit`]: an attempt is about to be sent: the breaker may refuse it
//!    (the call ends `breaker_open`), then the adaptive throttle may reject it (the call
//!    ends `throttled_locally`), then the bulkhead may make it wait or refuse it.
//! 3. [`CallPolicies::learn`]: an attempt's outcome is known (breaker and budget learn; a
//!    percentile hedge delay learns the latency of an answer; an adaptive throttle counts
//!    an accept).
//! 4. [`CallPolicies::may_retry`]: a retry has been decided (the budget may deny it).
//! 5. [`CallPolicies::attempt_over`]: the caller stops waiting for an attempt (its bulkhead
//!    permit comes back and may go to a waiter; an Envoy limit counts it out).
//!
//! An Envoy limit (`retry_budget`, `max_retries`) also counts what is in flight: the driver
//! tells it each attempt sent ([`CallPolicies::attempt_sent`], for an attempt that
//! [`CallPolicies::hears_attempts`]) and each retry it granted that is over
//! ([`CallPolicies::retry_over`]). An edge without one never asks.
//!
//! Hedging adds two questions asked when an attempt is sent and when its hedge is due:
//! [`CallPolicies::hedge_delay`] (when to hedge it) and [`CallPolicies::may_hedge`] (the
//! limit per attempt and the hedge budget).
//!
//! No I/O, and no random draws but the adaptive throttle's, from the stream the driver hands
//! to [`CallPolicies::admit`]: the driver owns time and handles.

use std::collections::BTreeMap;

use crate::engine::{SimDuration, SimTime};
use crate::metrics::CallCounters;
use rand_pcg::Pcg64;

use crate::model::{
    Breaker, Budget, Bulkhead, ClientRateLimiter, HedgeBudget, HedgeTimer, Outcome, Throttle,
};
use crate::scenario::{HedgeConfig, Policy};

/// Per-client policy instances kept in a vector up to this many; above it, only the clients
/// that have started a request have one.
pub(super) const DENSE_INSTANCES: usize = 4096;

/// The budgets or the breakers of an edge: none, one shared, or one per client. A few are
/// kept in a vector; many (up to 2^32 - 1 clients) in a map that holds only the instances of
/// clients that have started a request, every other one being in the fresh state, so that
/// memory follows the clients that sent something rather than the client count.
pub(super) struct Instances<T> {
    /// How many instances the edge has.
    pub count: usize,
    /// Whether they are all kept in `dense`.
    all: bool,
    /// The state of an instance nothing has touched.
    pub fresh: T,
    /// Every instance, when `all`.
    dense: Vec<T>,
    /// The instances touched so far, by index, when there are more.
    sparse: BTreeMap<usize, T>,
}

impl<T: Clone> Instances<T> {
    /// `count` fresh instances, kept in a vector if there are at most `dense_max`.
    fn new(fresh: T, count: usize, dense_max: usize) -> Self {
        let all = count <= dense_max;
        let dense = if all {
            vec![fresh.clone(); count]
        } else {
            Vec::new()
        };
        Instances {
            count,
            all,
            fresh,
            dense,
            sparse: BTreeMap::new(),
        }
    }

    /// Instance `i` (< count), made fresh on first use.
    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut T {
        if self.all {
            &mut self.dense[i]
        } else {
            let fresh = &self.fresh;
            self.sparse.entry(i).or_insert_with(|| fresh.clone())
        }
    }

    /// Every instance that may differ from a fresh one, in index order.
    pub fn touched(&self) -> impl Iterator<Item = &T> {
        self.dense.iter().chain(self.sparse.values())
    }

    /// Instances still fresh that [`Instances::touched`] leaves out.
    pub fn untouched(&self) -> usize {
        self.count - self.dense.len() - self.sparse.len()
    }
}

/// What [`CallPolicies::admit`] decided about an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    /// Send it now (holding a bulkhead permit if the edge has a bulkhead).
    Send,
    /// The breaker refused it: the call ends `breaker_open`.
    BreakerOpen,
    /// The adaptive throttle rejected it: the call ends `throttled_locally`.
    ThrottledLocally,
    /// Every bulkhead permit is taken: it waits until the given instant at the latest.
    Wait(SimTime),
    /// Every bulkhead permit is taken and it may not wait: it fails `bulkhead_full`.
    Full,
    /// The client rate limiter has no token yet: the attempt looks again at the given
    /// instant (before the call's deadline).
    Delay(SimTime),
    /// The client rate limiter would next look at or after the call's deadline: the call
    /// ends `deadline_exceeded` at its deadline, without a token.
    PastDeadline,
}

/// The policy state of one call edge.
pub(super) struct CallPolicies<'a> {
    /// The edge's settings.
    pub policy: &'a Policy,
    /// Whether budgets and breakers follow their scope per client (the clients' edge);
    /// a call between services has one of each.
    per_client: bool,
    /// On a group's edge, the id of its first client: client `base + i` has instance `i`.
    base: u32,
    /// Retry budgets.
    pub budgets: Option<Instances<Budget>>,
    /// Circuit breakers.
    pub breakers: Option<Instances<Breaker>>,
    /// The bulkhead.
    bulkhead: Option<Bulkhead>,
    /// Hedging.
    hedge: Option<Hedging>,
    /// Adaptive throttles: one per client on the clients' edge, one on a call between
    /// services (the calling service is the client).
    pub throttles: Option<Instances<Throttle>>,
    /// AWS adaptive-mode client rate limiters: one per client on the clients' edge, one on
    /// a call between services.
    pub limiters: Option<Instances<ClientRateLimiter>>,
    /// The budget counts attempts and retries in flight (an Envoy limit).
    counts_in_flight: bool,
}

/// Hedging on one edge.
struct Hedging {
    config: HedgeConfig,
    timer: HedgeTimer,
    budget: Option<HedgeBudget>,
}

impl<'a> CallPolicies<'a> {
    /// The policies of the clients' edge (`per_client`: budgets and breakers follow their
    /// scope over `clients`) or of a call between services (one of each).
    pub fn new(policy: &'a Policy, per_client: bool, clients: u32, dense_max: usize) -> Self {
        let count = |scope: crate::model::Scope| {
            if per_client {
                scope.instances(clients)
            } else {
                1
            }
        };
        CallPolicies {
            policy,
            per_client,
            base: 0,
            budgets: policy
                .budget
                .map(|b| Instances::new(Budget::new(b.kind), count(b.scope), dense_max)),
            breakers: policy
                .breaker
                .map(|b| Instances::new(Breaker::new(b), count(b.scope), dense_max)),
            bulkhead: policy.bulkhead.map(|b| Bulkhead::new(b.max_concurrent)),
            hedge: policy.hedge.map(|config| Hedging {
                config,
                timer: HedgeTimer::new(config.delay),
                budget: config.budget.map(HedgeBudget::new),
            }),
            throttles: policy.adaptive_throttle.map(|t| {
                let count = if per_client { clients as usize } else { 1 };
                Instances::new(Throttle::new(t.k_micros, t.window), count, dense_max)
            }),
            limiters: policy.client_rate_limiter.map(|wait| {
                let count = if per_client { clients as usize } else { 1 };
                Instances::new(ClientRateLimiter::waiting(wait), count, dense_max)
            }),
            counts_in_flight: policy
                .budget
                .is_some_and(|b| Budget::new(b.kind).counts_in_flight()),
        }
    }

    /// The policies of a group of clients whose first client has id `base`.
    pub fn with_first_client(mut self, base: u32) -> Self {
        self.base = base;
        self
    }

    /// Whether the edge hedges.
    #[inline(always)]
    pub fn hedges(&self) -> bool {
        self.hedge.is_some()
    }

    /// Whether abandoned hedge-race attempts are cancelled at their service.
    pub fn cancels(&self) -> bool {
        self.hedge.as_ref().is_some_and(|h| h.config.cancel)
    }

    /// How long an attempt goes unanswered before its next hedge, or `None`: no hedging (or
    /// a percentile delay with too few answers yet).
    #[inline]
    pub fn hedge_delay(&self) -> Option<SimDuration> {
        self.hedge.as_ref()?.timer.delay()
    }

    /// Whether late answers matter to the edge: its hedge delay is a percentile that learns
    /// from them.
    #[inline]
    pub fn learns_late(&self) -> bool {
        self.hedge.as_ref().is_some_and(|h| h.timer.learns())
    }

    /// An answer arrived for an attempt the caller had stopped waiting for (a race it lost),
    /// `latency` after it was sent: a percentile hedge delay learns it too, or it would
    /// only ever see the answers fast enough to win.
    #[cold]
    pub fn answered_late(&mut self, latency: SimDuration) {
        if let Some(h) = &mut self.hedge {
            h.timer.record(latency);
        }
    }

    /// Whether an attempt that has had `hedged` hedges may have another: the limit per
    /// attempt, then the hedge budget (which a hedge sent takes from).
    pub fn may_hedge(&mut self, hedged: u32) -> bool {
        let Some(h) = &mut self.hedge else {
            return false;
        };
        hedged < h.config.max_hedges && h.budget.as_mut().is_none_or(HedgeBudget::try_hedge)
    }

    /// Whether the policies need to hear of each attempt sent and ended: a bulkhead (its
    /// permits) or an Envoy limit (the attempts active).
    #[inline]
    pub fn hears_attempts(&self) -> bool {
        self.bulkhead.is_some() || self.counts_in_flight
    }

    /// Whether a retry the budget grants counts as in flight until
    /// [`CallPolicies::retry_over`] (an Envoy limit).
    #[inline(always)]
    pub fn counts_retries(&self) -> bool {
        self.counts_in_flight
    }

    /// An attempt of `client` was sent, holding a bulkhead permit or counted by an Envoy
    /// limit (see [`CallPolicies::hears_attempts`]).
    #[inline]
    pub fn attempt_sent(&mut self, client: u32) {
        if self.counts_in_flight
            && let Some(b) = self.budget(client)
        {
            b.attempt_sent();
        }
    }

    /// A retry of `client` that an Envoy limit granted is over: its request's next outcome
    /// is being decided, or the request ended (Envoy's `RetryStateImpl::resetRetry`).
    #[cold]
    pub fn retry_over(&mut self, client: u32) {
        if let Some(b) = self.budget(client) {
            b.retry_ended();
        }
    }

    /// The budget of `client`'s calls, if the edge has budgets. The check is in line at the
    /// caller; finding the instance is a call of its own.
    #[inline(always)]
    fn budget(&mut self, client: u32) -> Option<&mut Budget> {
        self.budgets.as_ref()?;
        self.find_budget(client)
    }

    #[inline(never)]
    fn find_budget(&mut self, client: u32) -> Option<&mut Budget> {
        let scope = self.policy.budget.as_ref()?.scope;
        let i = if self.per_client {
            scope.index(client - self.base)
        } else {
            0
        };
        Some(self.budgets.as_mut()?.get_mut(i))
    }

    /// The breaker of `client`'s calls, if the edge has breakers. The check is in line at
    /// the caller (twice per attempt: admission and outcome); finding the instance is a call
    /// of its own.
    #[inline(always)]
    fn breaker(&mut self, client: u32) -> Option<&mut Breaker> {
        self.breakers.as_ref()?;
        self.find_breaker(client)
    }

    #[inline(never)]
    fn find_breaker(&mut self, client: u32) -> Option<&mut Breaker> {
        let scope = self.policy.breaker.as_ref()?.scope;
        let i = if self.per_client {
            scope.index(client - self.base)
        } else {
            0
        };
        Some(self.breakers.as_mut()?.get_mut(i))
    }

    #[inline]
    fn throttle(&mut self, client: u32) -> Option<&mut Throttle> {
        let i = if self.per_client {
            (client - self.base) as usize
        } else {
            0
        };
        Some(self.throttles.as_mut()?.get_mut(i))
    }

    #[inline]
    fn limiter(&mut self, client: u32) -> Option<&mut ClientRateLimiter> {
        let i = if self.per_client {
            (client - self.base) as usize
        } else {
            0
        };
        Some(self.limiters.as_mut()?.get_mut(i))
    }

    /// Whether the edge has a budget, a breaker, hedging, an adaptive throttle or a client
    /// rate limiter to tell about calls and outcomes.
    #[inline(always)]
    fn watches(&self) -> bool {
        self.budgets.is_some()
            || self.breakers.is_some()
            || self.hedge.is_some()
            || self.throttles.is_some()
            || self.limiters.is_some()
    }

    /// Whether the edge's policies are passive: they admit every attempt, learn nothing from
    /// outcomes and let every retry go (no budget, breaker, bulkhead, hedging or adaptive
    /// throttle). What a caller on such an edge does after an answer then depends only on
    /// the call itself, which lets the driver settle it early. A new policy that admits,
    /// learns or limits must make this false.
    pub fn passive(&self) -> bool {
        !self.watches() && self.bulkhead.is_none()
    }

    /// Step 1: a logical call of `client` starts.
    #[inline(always)]
    pub fn call_started(&mut self, client: u32, now: SimTime) {
        if let Some(Hedging {
            budget: Some(b), ..
        }) = &mut self.hedge
        {
            b.call_started();
        }
        if self.budgets.is_none() {
            return;
        }
        if let Some(budget) = self.budget(client) {
            budget.request_started(now);
        }
    }

    /// Step 2: an attempt (a retry if `is_retry`) of a call of `client` whose deadline is
    /// `deadline` is about to be sent. An adaptive throttle counts it as a request and
    /// draws its rejection from `throttle_rng`.
    #[inline(always)]
    pub fn admit(
        &mut self,
        client: u32,
        is_retry: bool,
        deadline: SimTime,
        now: SimTime,
        throttle_rng: &mut Pcg64,
    ) -> Admit {
        if let Some(breaker) = self.breaker(client)
            && !breaker.allow(now, is_retry)
        {
            return Admit::BreakerOpen;
        }
        if self.throttles.is_some() && !self.throttle_admits(client, now, throttle_rng) {
            return Admit::ThrottledLocally;
        }
        if self.limiters.is_some() {
            return self.limiter_admits(client, now, deadline, now);
        }
        let Some(bulkhead) = &mut self.bulkhead else {
            return Admit::Send;
        };
        if bulkhead.try_acquire() {
            return Admit::Send;
        }
        let max_wait = self
            .policy
            .bulkhead
            .map_or(SimDuration::ZERO, |b| b.max_wait);
        if max_wait == SimDuration::ZERO {
            Admit::Full
        } else {
            Admit::Wait((now + max_wait).min(deadline))
        }
    }

    /// Step 2 for an edge with adaptive throttles: whether `client`'s throttle lets the
    /// attempt through.
    fn throttle_admits(&mut self, client: u32, now: SimTime, rng: &mut Pcg64) -> bool {
        self.throttle(client).is_none_or(|t| t.admit(now, rng))
    }

    /// Step 2 for an edge with client rate limiters (never with a bulkhead: validation
    /// refuses the two together), and again each time a send waiting since `since` looks
    /// again: send now with `client`'s token, look again later, or give up at the deadline
    /// when the next look would come at or after it.
    pub fn limiter_admits(
        &mut self,
        client: u32,
        since: SimTime,
        deadline: SimTime,
        now: SimTime,
    ) -> Admit {
        let Some(l) = self.limiter(client) else {
            return Admit::Send;
        };
        match l.try_send(since, now) {
            None => Admit::Send,
            Some(at) if at >= deadline => Admit::PastDeadline,
            Some(at) => Admit::Delay(at),
        }
    }

    /// Step 2, continued: `waiter` waits for a bulkhead permit.
    pub fn wait(&mut self, waiter: (u32, u32)) {
        if let Some(b) = &mut self.bulkhead {
            b.wait(waiter);
        }
    }

    /// Step 2, continued: a waiter's wait ended without a permit; `waiting` tells which
    /// queued waiters still wait.
    pub fn stop_waiting(&mut self, waiting: impl Fn((u32, u32)) -> bool) {
        if let Some(b) = &mut self.bulkhead {
            b.forget(waiting);
        }
    }

    /// Step 3: an attempt of a call of `client` sent at `sent` ended `outcome`; `retried`
    /// is the quota the call's last retry took, if the attempt was a retry. For the breaker
    /// every outcome but success, degraded and `permanent` (a 4xx: the server did its job)
    /// is a failure, as for a Resilience4j breaker recording server errors and timeouts. A
    /// budget pays only for outcomes the policy retries, as gRPC's throttle counts only
    /// retryable status codes. An adaptive throttle counts an accept for every answer but a
    /// refusal for overload (`rejected`, `throttled`) and a timeout.
    #[inline(always)]
    pub fn learn(
        &mut self,
        client: u32,
        outcome: Outcome,
        sent: SimTime,
        retried: Option<f64>,
        now: SimTime,
    ) {
        if self.watches() {
            self.learn_watched(client, outcome, sent, retried, now);
        }
    }

    /// [`CallPolicies::learn`] for an edge with a budget, a breaker, hedging or a throttle.
    fn learn_watched(
        &mut self,
        client: u32,
        outcome: Outcome,
        sent: SimTime,
        retried: Option<f64>,
        now: SimTime,
    ) {
        if let Some(h) = &mut self.hedge
            && h.timer.learns()
            && !matches!(
                outcome,
                Outcome::Timeout
                    | Outcome::BulkheadFull
                    | Outcome::BreakerOpen
                    | Outcome::DeadlineExceeded
            )
        {
            h.timer.record(now - sent);
        }
        if let Some(breaker) = self.breaker(client) {
            let failed = !matches!(
                outcome,
                Outcome::Success | Outcome::Degraded | Outcome::Permanent
            );
            breaker.record(now, failed, now - sent);
        }
        if self.throttles.is_some()
            && !matches!(
                outcome,
                Outcome::Rejected
                    | Outcome::Throttled
                    | Outcome::Timeout
                    | Outcome::BulkheadFull
                    | Outcome::BreakerOpen
                    | Outcome::DeadlineExceeded
                    | Outcome::ThrottledLocally
            )
            && let Some(t) = self.throttle(client)
        {
            t.accepted(now);
        }
        if self.limiters.is_some() {
            self.limiter_learns(client, outcome, now);
        }
        let retry_on = self.policy.retry.retry_on;
        if let Some(budget) = self.budget(client) {
            if matches!(outcome, Outcome::Success | Outcome::Degraded) {
                budget.attempt_succeeded(retried);
            } else if retry_on.contains(outcome) {
                budget.attempt_failed();
            }
        }
    }

    /// Step 3 for an edge with client rate limiters: botocore's `needs-retry` handler runs
    /// for every attempt that was sent, answered or not; only `throttled` (a 429 whose code
    /// is in botocore's list of throttling codes) is a throttling error, every other answer
    /// and a timeout count as successes. Outcomes of attempts never sent teach it nothing.
    fn limiter_learns(&mut self, client: u32, outcome: Outcome, now: SimTime) {
        if matches!(
            outcome,
            Outcome::BulkheadFull
                | Outcome::BreakerOpen
                | Outcome::DeadlineExceeded
                | Outcome::ThrottledLocally
                | Outcome::BudgetExhausted
        ) {
            return;
        }
        if let Some(l) = self.limiter(client) {
            l.answered(outcome == Outcome::Throttled, now);
        }
    }

    /// Step 4: a call of `client` means to retry after `outcome`. The budget is asked when
    /// the retry is decided, before the backoff (as gRPC and the AWS SDKs do). Returns what
    /// the retry takes from a quota, or `None` when the budget denies it.
    #[inline(always)]
    pub fn may_retry(&mut self, client: u32, outcome: Outcome, now: SimTime) -> Option<f64> {
        if self.budgets.is_none() {
            return Some(0.0);
        }
        match self.budget(client) {
            Some(budget) => budget.try_retry(now, outcome),
            None => Some(0.0),
        }
    }

    /// Step 5: the caller stopped waiting for an attempt of `client` that held a bulkhead
    /// permit or was counted by an Envoy limit. Returns the waiter the permit goes to, if
    /// one still waits (`waiting` tells).
    #[inline]
    pub fn attempt_over(
        &mut self,
        client: u32,
        waiting: impl Fn((u32, u32)) -> bool,
    ) -> Option<(u32, u32)> {
        if self.counts_in_flight
            && let Some(b) = self.budget(client)
        {
            b.attempt_ended();
        }
        self.bulkhead.as_mut()?.release(waiting)
    }

    /// Hedges the edge's hedge budget denied (0 without one).
    pub fn hedges_denied(&self) -> u64 {
        match &self.hedge {
            Some(Hedging {
                budget: Some(b), ..
            }) => b.denied,
            _ => 0,
        }
    }

    /// The sends the edge's client rate limiters delayed, and their waits added up, ns.
    pub fn token_waits(&self) -> (u64, u128) {
        self.limiters
            .iter()
            .flat_map(Instances::touched)
            .fold((0, 0), |(n, w), l| {
                (n + l.delayed, w + u128::from(l.waited_nanos))
            })
    }

    /// Adds what the edge's breakers, hedge budget and client rate limiters did to
    /// `counters`.
    pub fn count_into(&self, counters: &mut CallCounters) {
        let (n, w) = self.token_waits();
        counters.token_waits += n;
        counters.token_wait_nanos += w;
        for b in self.breakers.iter().flat_map(Instances::touched) {
            counters.breaker_refusals += b.refusals;
            counters.breaker_openings += b.openings;
        }
        counters.hedges_denied += self.hedges_denied();
    }
}
