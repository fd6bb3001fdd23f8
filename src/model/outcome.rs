//! Outcomes of attempts and of logical requests.

use std::fmt;

/// Declares [`Outcome`] from one list, so that the enum, its name table and its subsets
/// cannot drift apart. Each entry gives the variant, its snake_case name, whether a single
/// attempt can end with it, and whether a logical request that ends with it has failed.
/// Variants take their discriminants from their place in the list, which keeps
/// [`Outcome::index`] a plain cast on the hot path.
macro_rules! outcomes {
    (
        $(#[$enum_attr:meta])*
        pub enum Outcome {
            $(
                $(#[$attr:meta])*
                $variant:ident = $name:literal, attempt: $attempt:literal, failure: $failure:literal;
            )*
        }
    ) => {
        $(#[$enum_attr])*
        pub enum Outcome {
            $(
                $(#[$attr])*
                $variant,
            )*
        }

        /// How many outcomes there are.
        const COUNT: usize = [$($name),*].len();
        /// Which outcomes a single attempt can have, in list order.
        const IS_ATTEMPT: [bool; COUNT] = [$($attempt),*];
        /// Which outcomes are failures of a logical request, in list order.
        const IS_FAILURE: [bool; COUNT] = [$($failure),*];

        impl Outcome {
            /// Every outcome, in a fixed order (used for reports, so it is part of the output
            /// format).
            pub const ALL: [Outcome; COUNT] = [$(Outcome::$variant),*];

            /// The outcomes a single attempt can have.
            pub const ATTEMPT: [Outcome; count(IS_ATTEMPT)] = select(IS_ATTEMPT);

            /// Every way a logical request can fail, in report order.
            pub const FAILURES: [Outcome; count(IS_FAILURE)] = select(IS_FAILURE);

            /// The snake_case name used in scenario files and reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(Outcome::$variant => $name,)*
                }
            }
        }
    };
}

/// How many of `flags` are set, to size a subset of [`Outcome::ALL`].
const fn count(flags: [bool; COUNT]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < COUNT {
        if flags[i] {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The outcomes whose flag is set, in [`Outcome::ALL`] order; evaluated at compile time, so
/// the subsets cost nothing at run time.
const fn select<const N: usize>(flags: [bool; COUNT]) -> [Outcome; N] {
    let mut out = [Outcome::Success; N];
    let (mut i, mut j) = (0, 0);
    while i < COUNT {
        if flags[i] {
            out[j] = Outcome::ALL[i];
            j += 1;
        }
        i += 1;
    }
    out
}

outcomes! {
    /// How an attempt or a logical request ended.
    ///
    /// The first seven are attempt outcomes; a logical request (or a call between services)
    /// ends with `Success`, its last attempt's outcome, one of the policy outcomes
    /// (`BudgetExhausted`, `BreakerOpen`, `DeadlineExceeded`, `BulkheadFull`,
    /// `ThrottledLocally`), or `Degraded` when a fallback answered a call that failed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Outcome {
        /// The attempt was served successfully.
        Success = "success", attempt: true, failure: false;
        /// A retryable server error (5xx).
        Error = "error", attempt: true, failure: true;
        /// The server was full (503).
        Rejected = "rejected", attempt: true, failure: true;
        /// The server's rate limiter refused the attempt (429).
        Throttled = "throttled", attempt: true, failure: true;
        /// The client gave up waiting for the answer.
        Timeout = "timeout", attempt: true, failure: true;
        /// An optimistic-concurrency write lost.
        Conflict = "conflict", attempt: true, failure: true;
        /// A bad request (4xx): never retried.
        Permanent = "permanent", attempt: true, failure: true;
        /// A retry budget denied the retry.
        BudgetExhausted = "budget_exhausted", attempt: false, failure: true;
        /// A circuit breaker refused the attempt.
        BreakerOpen = "breaker_open", attempt: false, failure: true;
        /// The request's deadline passed.
        DeadlineExceeded = "deadline_exceeded", attempt: false, failure: true;
        /// A full bulkhead refused the attempt (no permit within `max_wait`).
        BulkheadFull = "bulkhead_full", attempt: false, failure: true;
        /// A fallback answered a call that failed: the request succeeded, degraded. Neither a
        /// full success nor a failure.
        Degraded = "degraded", attempt: false, failure: false;
        /// The client's adaptive throttle rejected the attempt locally: nothing was sent, and
        /// the request ends (never retried).
        ThrottledLocally = "throttled_locally", attempt: false, failure: true;
    }
}

impl Outcome {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The derived lists are the ones the reports were written against, so a change to
    /// the outcome list that moves a column shows up here.
    #[test]
    fn the_lists_keep_their_order_and_indices() {
        let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
        assert_eq!(
            names,
            [
                "success",
                "error",
                "rejected",
                "throttled",
                "timeout",
                "conflict",
                "permanent",
                "budget_exhausted",
                "breaker_open",
                "deadline_exceeded",
                "bulkhead_full",
                "degraded",
                "throttled_locally",
            ]
        );
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(o.index(), i);
        }
        assert_eq!(Outcome::ATTEMPT[..], Outcome::ALL[..7]);
        let failures: Vec<Outcome> = Outcome::ALL
            .into_iter()
            .filter(|o| !matches!(o, Outcome::Success | Outcome::Degraded))
            .collect();
        assert_eq!(Outcome::FAILURES[..], failures[..]);
    }
}
