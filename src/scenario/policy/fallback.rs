//! `policy.fallback`: what answers a call that failed for good, in one place: the raw setting a
//! scenario file writes, the checked latency distribution the simulation takes, the default
//! between them (validation writes it back into the raw setting) and its words in report.md.
//! A request a fallback answered ends `degraded`: neither a success nor a failure.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::Dist;
use crate::scenario::check::{Checker, zero_dist};
use crate::scenario::phrase::words;
use crate::scenario::schema::RawDist;

/// `fallback`: what answers a call that failed for good.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFallback {
    /// How long the fallback takes to answer (default {"constant": "0ms"}).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<RawDist>,
}

/// `fallback` of the policy `at`: the latency of its answer, `{"constant": "0ms"}` when
/// the file gives none.
pub(in crate::scenario) fn check(c: &mut Checker, at: &str, raw: &mut RawFallback) -> Dist {
    let latency = raw.latency.get_or_insert_with(zero_dist);
    c.dist(&format!("{at}.fallback.latency"), latency)
}

/// A fallback in a phrase, for a call's policy.
pub(in crate::scenario) fn phrase(latency: &Dist) -> String {
    format!(
        "a call that fails for good is answered by a fallback after {} (the request then ends degraded: neither a success nor a failure)",
        words(latency)
    )
}
