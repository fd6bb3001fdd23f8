//! `policy.idempotency_key`: idempotency keys on a call, in one place: the raw setting a
//! scenario file writes, the checked [`IdempotencyKey`] the simulation takes, and the rules and
//! defaults between them (validation writes the defaults back into the raw setting). The key
//! store itself is `crate::model::idempotency`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::scenario::check::{Checker, written};
use crate::scenario::schema::DurationText;

/// `policy.idempotency_key`: true (the defaults), false (no keys) or the settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RawIdempotencyKey {
    /// true: keys with the default settings; false: no keys.
    On(bool),
    /// Keys with these settings.
    Settings(RawKeySettings),
}

/// `policy.idempotency_key` as an object.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawKeySettings {
    /// How long the service remembers a call it executed (default "24h").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<DurationText>,
    /// Time to answer a repeat from memory (default "0ms").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<DurationText>,
}

/// `policy.idempotency_key`: the caller sends a key with every attempt of a call, and the
/// service remembers the calls it executed for `ttl`. A repeat of a call it remembers is
/// answered from memory after `cost`, with the remembered outcome, without executing again
/// and without a worker; a repeat that arrives while an earlier attempt of its call is still
/// being executed waits for that attempt's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// How long an executed call is remembered (default 24 h).
    pub ttl: SimDuration,
    /// Time to answer a repeat from memory (default 0).
    pub cost: SimDuration,
}

/// How long a service remembers an executed call by default (`idempotency_key.ttl`).
pub const DEFAULT_KEY_TTL: SimDuration = SimDuration::from_secs(24 * 3600);

/// `idempotency_key` of the policy `at`: `None` for `false`.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &mut RawIdempotencyKey,
) -> Option<IdempotencyKey> {
    let key = read_idempotency_key(c, at, raw)?;
    // The key that runs, with its settings filled in.
    *raw = RawIdempotencyKey::Settings(RawKeySettings {
        ttl: Some(written(key.ttl)),
        cost: Some(written(key.cost)),
    });
    Some(key)
}

/// [`check`], read.
fn read_idempotency_key(
    c: &mut Checker,
    at: &str,
    raw: &RawIdempotencyKey,
) -> Option<IdempotencyKey> {
    let p = format!("{at}.idempotency_key");
    match raw {
        RawIdempotencyKey::On(false) => None,
        RawIdempotencyKey::On(true) => Some(IdempotencyKey {
            ttl: DEFAULT_KEY_TTL,
            cost: SimDuration::ZERO,
        }),
        RawIdempotencyKey::Settings(k) => Some(IdempotencyKey {
            ttl: k
                .ttl
                .as_ref()
                .map_or(Some(DEFAULT_KEY_TTL), |d| {
                    c.positive_duration(&format!("{p}.ttl"), d)
                })
                .unwrap_or(DEFAULT_KEY_TTL),
            cost: k
                .cost
                .as_ref()
                .and_then(|d| c.duration(&format!("{p}.cost"), d))
                .unwrap_or_default(),
        }),
    }
}

/// Idempotency keys in a phrase: how long a key is remembered and what a repeat costs.
pub(in crate::scenario) fn phrase(k: &IdempotencyKey) -> String {
    let answer = if k.cost == SimDuration::ZERO {
        "at once".to_string()
    } else {
        format!("in {}", k.cost)
    };
    format!(
        "idempotency keys remembered for {}, a repeat answered {answer}",
        k.ttl
    )
}
