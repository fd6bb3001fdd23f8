//! What each part of a run did in one replication: the counts the driver keeps for each
//! service ([`ServiceCounters`]), each call edge between services ([`CallCounters`]) and,
//! where the clients form several groups, each group ([`GroupCounters`]), and the numbers
//! read from them ([`ServiceMetrics`], [`CallMetrics`], [`GroupMetrics`], summary.json's
//! `services`, `calls` and `groups`).
//!
//! Every run is a graph, and a single-server scenario is one service (the entry) called by the
//! clients, with no calls between services. [`super::Counters`] describes the clients and
//! their calls to the entry; these describe every service, the entry first (the recovery
//! analysis and the `server.*` metrics read it), and every call edge between services.
//!
//! No I/O here: these are values.

use serde::{Deserialize, Serialize};

use super::{Latency, LatencyHistogram, ratio_f64};
use crate::engine::{SimDuration, SimTime};
use crate::model::Outcome;

/// Counts of one service over one replication.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceCounters {
    /// Attempts that reached the service.
    pub attempts: u64,
    /// Attempts finished: their service time and the downstream calls they made are done
    /// and the service answered (or found nobody waiting: wasted).
    pub served: u64,
    /// Attempts served whose answer nobody read: their caller had given up when the work
    /// was done (or, with `drop_expired`, when the next downstream call was due, and the
    /// work stopped there).
    pub wasted: u64,
    /// Attempts answered `success` (in full, not degraded) to a caller still waiting.
    pub useful: u64,
    /// Attempts rejected because every worker was busy and the waiting room full.
    pub rejected: u64,
    /// Attempts refused by the service's rate limit.
    pub throttled: u64,
    /// Attempts discarded because their caller had given up: with `drop_expired` at
    /// arrival, at dequeue or before a downstream call, and any attempt whose work a
    /// deadline cut off when its caller stopped waiting.
    pub expired_dropped: u64,
    /// Attempts answered `error` at once by an `outage: reject` fault.
    pub outage_rejected: u64,
    /// Attempts lost to an `outage: drop` fault.
    pub outage_dropped: u64,
    /// Abandoned hedge-race attempts dropped before service because their caller cancelled
    /// them (`hedge.cancel`).
    pub cancelled: u64,
    /// Attempts the service's CoDel discipline shed at dequeue, answered `rejected`.
    pub shed: u64,
    /// Executions of a non-idempotent call after its first: duplicate side effects.
    pub duplicates: u64,
    /// Calls executed more than once (at least one duplicate).
    pub duplicate_calls: u64,
    /// Repeats answered from the idempotency key memory without executing.
    pub replayed: u64,
    /// Worker-nanoseconds held: service time plus the time a worker waited on downstream
    /// calls.
    pub busy_nanos: u128,
    /// Worker-nanoseconds available over the utilization's horizon: the workers in force at
    /// each instant (peak in service when unlimited), fault windows included.
    pub capacity_nanos: u128,
    /// When the service last finished an attempt.
    pub last_service_end: SimTime,
    /// Most attempts waiting at once.
    pub max_queue: u64,
    /// Most attempts holding a worker at once.
    pub max_in_service: u64,
    /// Times a caller's outlier detector ejected it (a replica of a pool), every caller's
    /// added up.
    pub ejections: u64,
    /// Nanoseconds it spent ejected from a caller's balancer, every caller's added up.
    pub ejected_nanos: u64,
}

impl ServiceCounters {
    /// Adds the counts of `other`, another replica of the same service: the service's counts
    /// are its replicas' added up, its longest queue and latest service end the latest of
    /// theirs.
    pub fn add(&mut self, other: &ServiceCounters) {
        self.attempts += other.attempts;
        self.served += other.served;
        self.wasted += other.wasted;
        self.useful += other.useful;
        self.rejected += other.rejected;
        self.throttled += other.throttled;
        self.expired_dropped += other.expired_dropped;
        self.outage_rejected += other.outage_rejected;
        self.outage_dropped += other.outage_dropped;
        self.cancelled += other.cancelled;
        self.shed += other.shed;
        self.duplicates += other.duplicates;
        self.duplicate_calls += other.duplicate_calls;
        self.replayed += other.replayed;
        self.busy_nanos += other.busy_nanos;
        self.capacity_nanos += other.capacity_nanos;
        self.last_service_end = self.last_service_end.max(other.last_service_end);
        self.max_queue = self.max_queue.max(other.max_queue);
        self.max_in_service += other.max_in_service;
        self.ejections += other.ejections;
        self.ejected_nanos += other.ejected_nanos;
    }
}

/// Counts of one call edge (caller service -> target service) over one replication.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallCounters {
    /// Calls made on the edge (each may make several attempts).
    pub calls: u64,
    /// Attempts sent on the edge (first attempts and retries).
    pub attempts: u64,
    /// Retries sent.
    pub retries: u64,
    /// Calls that ended successfully.
    pub succeeded: u64,
    /// Calls that failed and were answered by the fallback.
    pub degraded: u64,
    /// Calls that failed for good (fallback or not).
    pub failed: u64,
    /// Attempts refused by a full bulkhead.
    pub bulkhead_full: u64,
    /// Retries the edge's budget denied.
    pub budget_denials: u64,
    /// Attempts the edge's breaker refused.
    pub breaker_refusals: u64,
    /// Times the edge's breaker opened.
    pub breaker_openings: u64,
    /// Hedges sent (attempts beyond the first and the retries).
    pub hedges: u64,
    /// Calls whose answer came from a hedge.
    pub hedge_wins: u64,
    /// Hedges the edge's hedge budget denied.
    pub hedges_denied: u64,
    /// Calls the caller's adaptive throttle rejected locally.
    pub throttled_locally: u64,
    /// Attempts the caller's client rate limiter held back for a token.
    pub token_waits: u64,
    /// Their waits added up, in nanoseconds.
    pub token_wait_nanos: u128,
    /// For a call of the entry service made by part of the requests (`fraction` below 1):
    /// the logical requests whose route includes it that ended, whether or not the call was
    /// reached (a request refused by a full entry service still took its route).
    pub route_requests: u64,
    /// Of those, the ones that succeeded in full.
    pub route_succeeded: u64,
}

/// One service's numbers over one replication (or a variant's means or half-widths), in
/// the order of the scenario's services (the entry first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceMetrics {
    /// Attempts received.
    pub attempts: f64,
    /// Attempts received per logical request the clients started.
    pub amplification: f64,
    /// Attempts served.
    pub served: f64,
    /// Served attempts whose caller had already given up.
    pub wasted: f64,
    /// Attempts rejected because the service was full.
    pub rejected: f64,
    /// Attempts refused by the service's rate limit.
    pub throttled: f64,
    /// Attempts discarded because their caller had given up.
    pub expired_dropped: f64,
    /// Successful answers (in full, not degraded) to callers still waiting, per second of
    /// the run.
    pub goodput_per_s: f64,
    /// Worker-time held (service plus waiting on downstream calls) over worker-time
    /// available, in [0, 1].
    pub utilization: f64,
    /// Most attempts waiting at once.
    pub max_queue: f64,
    /// When the service finished its last attempt, in ms: after the completion time when it
    /// went on serving attempts whose callers had already given up.
    pub busy_until_ms: f64,
    /// Attempts answered `error` at once by an `outage: reject` fault (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outage_rejected: f64,
    /// Attempts lost to an `outage: drop` fault (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outage_dropped: f64,
    /// Abandoned hedge-race attempts dropped before service (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: f64,
    /// Attempts shed by CoDel at dequeue, answered `rejected` (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shed: f64,
    /// Executions of a non-idempotent call after its first (absent when none happened).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicates: f64,
    /// Calls executed more than once (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicate_calls: f64,
    /// Repeats answered from the idempotency key memory (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed: f64,
    /// Times a caller's outlier detector ejected it, every caller's added up (absent when
    /// none did).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ejections: f64,
    /// Seconds it spent ejected from a caller's balancer, every caller's added up (absent
    /// when none ejected it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ejected_s: f64,
}

/// Whether a count is zero, for counts left out of summary.json when they are.
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// One call edge's numbers over one replication (or a variant's means or half-widths), in
/// the order of the scenario's services, then of each service's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallMetrics {
    /// Calls made.
    pub calls: f64,
    /// Attempts sent.
    pub attempts: f64,
    /// Attempts sent per logical request the clients started.
    pub attempts_per_request: f64,
    /// Retries sent.
    pub retries: f64,
    /// Calls that succeeded.
    pub succeeded: f64,
    /// Calls answered by the fallback.
    pub degraded: f64,
    /// Calls that failed for good.
    pub failed: f64,
    /// Attempts refused by a full bulkhead.
    pub bulkhead_full: f64,
    /// Hedges sent (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hedges: f64,
    /// Calls whose answer came from a hedge (absent when none did).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hedge_wins: f64,
    /// Calls the caller's adaptive throttle rejected locally (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub throttled_locally: f64,
    /// Attempts the caller's client rate limiter held back for a token (absent when none
    /// was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub token_waits: f64,
    /// Their mean wait for a token, in ms (absent when none waited).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub token_wait_ms: f64,
    /// Retries the call's budget denied (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub budget_denials: f64,
    /// Attempts the call's breaker refused (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub breaker_refusals: f64,
    /// Times the call's breaker opened (absent when it never did).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub breaker_openings: f64,
    /// Hedges the call's hedge budget denied (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hedges_denied: f64,
    /// For a call of the entry service made by part of the requests: the share of the
    /// requests on its route that succeeded in full (absent for other calls, and when no
    /// request on the route ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_success_rate: Option<f64>,
}

impl ServiceCounters {
    /// The metrics, for a run whose clients started `requests` logical requests and that
    /// ended at `end`.
    pub fn metrics(&self, requests: u64, end: SimTime) -> ServiceMetrics {
        let per_request = |n: u64| {
            if requests == 0 {
                0.0
            } else {
                ratio_f64(u128::from(n), requests)
            }
        };
        let secs = end.as_nanos() as f64 / 1e9;
        ServiceMetrics {
            attempts: self.attempts as f64,
            amplification: per_request(self.attempts),
            served: self.served as f64,
            wasted: self.wasted as f64,
            rejected: self.rejected as f64,
            throttled: self.throttled as f64,
            expired_dropped: self.expired_dropped as f64,
            goodput_per_s: if secs > 0.0 {
                self.useful as f64 / secs
            } else {
                0.0
            },
            // Attempts in service keep their workers when a fault window lowers the count,
            // so busy time can briefly exceed the capacity in force: the share is capped at 1.
            utilization: if self.capacity_nanos == 0 {
                0.0
            } else {
                (self.busy_nanos as f64 / self.capacity_nanos as f64).min(1.0)
            },
            max_queue: self.max_queue as f64,
            busy_until_ms: self.last_service_end.as_millis_f64(),
            outage_rejected: self.outage_rejected as f64,
            outage_dropped: self.outage_dropped as f64,
            cancelled: self.cancelled as f64,
            shed: self.shed as f64,
            duplicates: self.duplicates as f64,
            duplicate_calls: self.duplicate_calls as f64,
            replayed: self.replayed as f64,
            ejections: self.ejections as f64,
            ejected_s: self.ejected_nanos as f64 / 1e9,
        }
    }
}

/// The mean of `waited` ns over `waits` waits, in ms (0 without a wait).
pub fn mean_wait_ms(waits: u64, waited: u128) -> f64 {
    if waits == 0 {
        0.0
    } else {
        ratio_f64(waited, waits) / 1e6
    }
}

impl CallCounters {
    /// The metrics, for a run whose clients started `requests` logical requests.
    pub fn metrics(&self, requests: u64) -> CallMetrics {
        CallMetrics {
            calls: self.calls as f64,
            attempts: self.attempts as f64,
            attempts_per_request: if requests == 0 {
                0.0
            } else {
                ratio_f64(u128::from(self.attempts), requests)
            },
            retries: self.retries as f64,
            succeeded: self.succeeded as f64,
            degraded: self.degraded as f64,
            failed: self.failed as f64,
            bulkhead_full: self.bulkhead_full as f64,
            hedges: self.hedges as f64,
            hedge_wins: self.hedge_wins as f64,
            throttled_locally: self.throttled_locally as f64,
            token_waits: self.token_waits as f64,
            token_wait_ms: mean_wait_ms(self.token_waits, self.token_wait_nanos),
            budget_denials: self.budget_denials as f64,
            breaker_refusals: self.breaker_refusals as f64,
            breaker_openings: self.breaker_openings as f64,
            hedges_denied: self.hedges_denied as f64,
            route_success_rate: (self.route_requests > 0)
                .then(|| self.route_succeeded as f64 / self.route_requests as f64),
        }
    }
}

/// Counts of one group of clients over one replication, kept only where there are several
/// groups (the totals are [`super::Counters`]).
#[derive(Debug, Clone, Default)]
pub struct GroupCounters {
    /// The group's logical requests that ended.
    pub ended: u64,
    /// Of those, the ones that succeeded.
    pub succeeded: u64,
    /// Attempts (first attempts and retries, not hedges) the ended requests made.
    pub attempts: u64,
    /// Latency of the requests answered (successes, and answers of a fallback).
    pub answered: LatencyHistogram,
}

impl GroupCounters {
    /// Counts a request of the group that ended with `outcome`, `latency` after it started,
    /// having made `attempts` attempts.
    pub fn ended(&mut self, outcome: Outcome, latency: SimDuration, attempts: u32) {
        self.ended += 1;
        self.attempts += u64::from(attempts);
        if outcome == Outcome::Success {
            self.succeeded += 1;
        }
        if matches!(outcome, Outcome::Success | Outcome::Degraded) {
            self.answered.record(latency);
        }
    }

    /// The group's numbers in this replication.
    pub fn metrics(&self) -> GroupMetrics {
        let per_request = |n: u64| {
            if self.ended == 0 {
                0.0
            } else {
                ratio_f64(u128::from(n), self.ended)
            }
        };
        GroupMetrics {
            requests: self.ended as f64,
            succeeded: self.succeeded as f64,
            success_rate: per_request(self.succeeded),
            attempts_per_request: per_request(self.attempts),
            latency_ms: (self.answered.count() > 0).then(|| self.answered.summary()),
        }
    }
}

/// One group of clients' numbers over one replication (or a variant's means or
/// half-widths), in the order of the scenario's groups: summary.json's `groups`, present
/// only where the clients form more than one group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMetrics {
    /// The group's logical requests that ended.
    pub requests: f64,
    /// Of those, the ones that succeeded.
    pub succeeded: f64,
    /// The share of the group's requests that ended that succeeded.
    pub success_rate: f64,
    /// Attempts (first attempts and retries) per request of the group that ended.
    pub attempts_per_request: f64,
    /// Latency of the group's answered requests, in ms; absent when none was answered (a
    /// variant's: the mean over the replications that answered some).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<Latency>,
}
