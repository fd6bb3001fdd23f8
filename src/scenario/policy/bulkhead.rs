//! `policy.bulkhead`: a semaphore bulkhead on a call between services, in one place: the raw
//! setting a scenario file writes, the checked [`BulkheadConfig`] the simulation takes, and the
//! rules and defaults between them (validation writes the defaults back into the raw setting).
//! The bulkhead itself is `crate::model::bulkhead`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;

use crate::scenario::check::{Checker, written};
use crate::scenario::schema::DurationText;

/// `bulkhead`: Resilience4j's semaphore bulkhead on one call edge.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBulkhead {
    /// Attempts in flight on the call at once (at least 1).
    #[schemars(range(min = 1, max = u32::MAX))]
    pub max_concurrent: u64,
    /// Longest wait for a permit, in arrival order, before the attempt fails
    /// `bulkhead_full` (default "0ms": at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait: Option<DurationText>,
}

/// `policy.bulkhead`: a semaphore bulkhead on one call edge (Resilience4j's
/// `SemaphoreBulkhead`): at most `max_concurrent` attempts in flight on the edge; an attempt
/// beyond waits up to `max_wait` for a permit, in arrival order, then fails `bulkhead_full`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadConfig {
    /// Permits (>= 1).
    pub max_concurrent: u32,
    /// Longest wait for a permit; zero fails at once.
    pub max_wait: SimDuration,
}

/// `bulkhead` of the policy `at`.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut RawBulkhead,
) -> BulkheadConfig {
    let p = format!("{at}.bulkhead");
    let max_concurrent = if raw.max_concurrent == 0 {
        c.err(
            &format!("{p}.max_concurrent"),
            "must be at least 1 (got 0): it is how many attempts may be in flight on the call at once",
        );
        1
    } else {
        c.count_u32(&format!("{p}.max_concurrent"), raw.max_concurrent, 1)
    };
    BulkheadConfig {
        max_concurrent,
        max_wait: c
            .duration(
                &format!("{p}.max_wait"),
                raw.max_wait
                    .get_or_insert_with(|| written(SimDuration::ZERO)),
            )
            .unwrap_or_default(),
    }
}

/// A bulkhead in a phrase, for a call's policy.
pub(in crate::scenario) fn phrase(b: &BulkheadConfig) -> String {
    let wait = if b.max_wait == SimDuration::ZERO {
        "an attempt beyond fails `bulkhead_full` at once".to_string()
    } else {
        format!(
            "an attempt beyond waits up to {} for a permit, then fails `bulkhead_full`",
            b.max_wait
        )
    };
    format!(
        "a bulkhead of {} attempts in flight ({wait})",
        b.max_concurrent
    )
}
