//! Outcomes of attempts and of logical requests.

use std::fmt;

/// How an attempt or a logical request ended.
///
/// The first seven are attempt outcomes; a logical request (or a call between services) ends
/// with `Success`, its last attempt's outcome, one of the policy outcomes (`BudgetExhausted`,
/// `BreakerOpen`, `DeadlineExceeded`, `BulkheadFull`, `ThrottledLocally`), or `Degraded` when
/// a fallback answered a call that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// The attempt was served successfully.
    Success = 0,
    /// A retryable server error (5xx).
    Error = 1,
    /// The server was full (503).
    Rejected = 2,
    /// The server's rate limiter refused the attempt (429).
    Throttled = 3,
    /// The client gave up waiting for the answer.
    Timeout = 4,
    /// An optimistic-concurrency write lost.
    Conflict = 5,
    /// A bad request (4xx): never retried.
    Permanent = 6,
    /// A retry budget denied the retry.
    BudgetExhausted = 7,
    /// A circuit breaker refused the attempt.
    BreakerOpen = 8,
    /// The request's deadline passed.
    DeadlineExceeded = 9,
    /// A full bulkhead refused the attempt (no permit within `max_wait`).
    BulkheadFull = 10,
    /// A fallback answered a call that failed: the request succeeded, degraded. Neither a
    /// full success nor a failure.
    Degraded = 11,
    /// The client's adaptive throttle rejected the attempt locally: nothing was sent, and
    /// the request ends (never retried).
    ThrottledLocally = 12,
}

impl Outcome {
    /// Every outcome, in a fixed order (used for reports, so it is part of the output format).
    pub const ALL: [Outcome; 13] = [
        Outcome::Success,
        Outcome::Error,
        Outcome::Rejected,
        Outcome::Throttled,
        Outcome::Timeout,
        Outcome::Conflict,
        Outcome::Permanent,
        Outcome::BudgetExhausted,
        Outcome::BreakerOpen,
        Outcome::DeadlineExceeded,
        Outcome::BulkheadFull,
        Outcome::Degraded,
        Outcome::ThrottledLocally,
    ];

    /// The outcomes a single attempt can have.
    pub const ATTEMPT: [Outcome; 7] = [
        Outcome::Success,
        Outcome::Error,
        Outcome::Rejected,
        Outcome::Throttled,
        Outcome::Timeout,
        Outcome::Conflict,
        Outcome::Permanent,
    ];

    /// Every way a logical request can fail, in report order.
    pub const FAILURES: [Outcome; 11] = [
        Outcome::Error,
        Outcome::Rejected,
        Outcome::Throttled,
        Outcome::Timeout,
        Outcome::Conflict,
        Outcome::Permanent,
        Outcome::BudgetExhausted,
        Outcome::BreakerOpen,
        Outcome::DeadlineExceeded,
        Outcome::BulkheadFull,
        Outcome::ThrottledLocally,
    ];

    /// The snake_case name used in scenario files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Rejected => "rejected",
            Outcome::Throttled => "throttled",
            Outcome::Timeout => "timeout",
            Outcome::Conflict => "conflict",
            Outcome::Permanent => "permanent",
            Outcome::BudgetExhausted => "budget_exhausted",
            Outcome::BreakerOpen => "breaker_open",
            Outcome::DeadlineExceeded => "deadline_exceeded",
            Outcome::BulkheadFull => "bulkhead_full",
            Outcome::Degraded => "degraded",
            Outcome::ThrottledLocally => "throttled_locally",
        }
    }

    /// Position in [`Outcome::ALL`], for indexing counters.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of outcomes, as a bit mask (for `retry_on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutcomeSet(u16);

impl OutcomeSet {
    /// The default `retry_on`: timeout, error, rejected, throttled, conflict.
    pub fn default_retryable() -> Self {
        [
            Outcome::Timeout,
            Outcome::Error,
            Outcome::Rejected,
            Outcome::Throttled,
            Outcome::Conflict,
        ]
        .into_iter()
        .collect()
    }

    /// Whether `o` is in the set.
    pub fn contains(self, o: Outcome) -> bool {
        self.0 & (1 << o as u16) != 0
    }

    /// The members, in [`Outcome::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Outcome> {
        Outcome::ALL.into_iter().filter(move |o| self.contains(*o))
    }
}

impl FromIterator<Outcome> for OutcomeSet {
    fn from_iter<I: IntoIterator<Item = Outcome>>(iter: I) -> Self {
        OutcomeSet(iter.into_iter().fold(0, |m, o| m | 1 << o as u16))
    }
}
