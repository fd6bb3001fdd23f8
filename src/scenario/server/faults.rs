//! `server.faults`: windows of trouble (outages, error bursts, slowdowns, stalls), in one
//! place: the raw windows a scenario file writes, the rules that give the checked [`Faults`],
//! and their words in report.md. How a window acts on a server is `crate::model::fault`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::{SimDuration, SimTime};
use crate::model::{Fault, FaultEffect, Faults, Outage};
use crate::scenario::check::Checker;
use crate::scenario::error::num;
use crate::scenario::schema::DurationText;

/// The largest service-time factor of a fault window.
pub const MAX_SERVICE_TIME_FACTOR: f64 = 1000.0;

/// `server.faults[i].outage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RawOutage {
    /// Every arrival is answered `error` at once.
    Reject,
    /// No answer at all: clients time out.
    Drop,
}

/// One fault window with exactly one effect.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    /// Start of the window.
    pub from: DurationText,
    /// End of the window (exclusive).
    pub to: DurationText,
    /// An outage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<RawOutage>,
    /// Error probability inside the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub error_rate: Option<f64>,
    /// Service-time multiplier for attempts that start service inside the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1000.0), extend("exclusiveMinimum" = 0))]
    pub service_time_factor: Option<f64>,
    /// Workers inside the window; 0 is a stall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = u32::MAX))]
    pub concurrency: Option<u64>,
    /// The one replica (0-based) of a replicated service the window strikes (default:
    /// every replica).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u64>,
}

/// The fault windows of the server `at` with `replicas` replicas; `duration` is the
/// scenario's, which a window must start before.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: &[RawFault],
    duration: Option<SimDuration>,
    replicas: u32,
) -> Faults {
    let mut windows = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let p = format!("{at}.faults[{i}]");
        let from = c.duration(&format!("{p}.from"), &f.from);
        let to = c.duration(&format!("{p}.to"), &f.to);
        if let (Some(from), Some(to)) = (from, to)
            && to <= from
        {
            c.err(
                &format!("{p}.to"),
                format!("must be later than from (got from {from}, to {to})"),
            );
        }
        if let (Some(from), Some(duration)) = (from, duration)
            && from >= duration
        {
            c.err(
                &format!("{p}.from"),
                format!(
                    "must be before duration (got {from}, duration {duration}): no new requests arrive after it, so the fault would test nothing"
                ),
            );
        }
        let mut effects = Vec::new();
        if let Some(o) = f.outage {
            effects.push(FaultEffect::Outage(match o {
                RawOutage::Reject => Outage::Reject,
                RawOutage::Drop => Outage::Drop,
            }));
        }
        if let Some(rate) = f.error_rate {
            let rate = c.probability(&format!("{p}.error_rate"), Some(rate));
            effects.push(FaultEffect::ErrorRate(rate));
        }
        if let Some(x) = f.service_time_factor {
            if !(x > 0.0 && x <= MAX_SERVICE_TIME_FACTOR) {
                c.err(
                    &format!("{p}.service_time_factor"),
                    format!(
                        "must be a number > 0 and at most 1000 (got {}); 3 makes service three times slower",
                        num(x)
                    ),
                );
            }
            effects.push(FaultEffect::ServiceTimeFactor(x));
        }
        if let Some(n) = f.concurrency {
            effects.push(FaultEffect::Concurrency(c.count_u32(
                &format!("{p}.concurrency"),
                n,
                0,
            )));
        }
        let replica = f.replica.map(|k| replica(c, &p, k, replicas));
        match effects.as_slice() {
            [effect] => windows.push(Fault {
                from: SimTime::ZERO + from.unwrap_or_default(),
                to: SimTime::ZERO + to.unwrap_or_default(),
                effect: *effect,
                replica,
            }),
            [] => c.err(
                &p,
                "needs one effect: \"outage\" (\"reject\" or \"drop\"), \"error_rate\", \"service_time_factor\" or \"concurrency\"",
            ),
            _ => c.err(
                &p,
                format!(
                    "has {} effects; a window has exactly one (write overlapping windows for several)",
                    effects.len()
                ),
            ),
        }
    }
    Faults::new(windows)
}

/// `faults[i].replica` at `p`: one of the server's `replicas` replicas, numbered from 0.
fn replica(c: &mut Checker, p: &str, k: u64, replicas: u32) -> u32 {
    if k >= u64::from(replicas) {
        c.err(
            &format!("{p}.replica"),
            format!(
                "must name one of the server's {replicas} replica{} (0 to {}; got {k}): set replicas above {k}, or name an existing one",
                if replicas == 1 { "" } else { "s" },
                replicas - 1
            ),
        );
        return 0;
    }
    k as u32
}

/// A fault window in one sentence.
pub(in crate::scenario) fn sentence(f: &Fault, who: Option<&str>) -> String {
    let effect = match f.effect {
        FaultEffect::Outage(Outage::Reject) => {
            "an outage: every attempt is answered `error` at once".to_string()
        }
        FaultEffect::Outage(Outage::Drop) => {
            "an outage: attempts vanish without an answer, so clients wait for their timeout"
                .to_string()
        }
        FaultEffect::ErrorRate(p) => format!("{} % of served attempts fail", 100.0 * p),
        FaultEffect::ServiceTimeFactor(x) => {
            format!("service that starts in the window takes {x}x as long")
        }
        FaultEffect::Concurrency(0) => {
            "a stall: nothing new starts service, arrivals wait (or are rejected when the waiting room is full)".to_string()
        }
        FaultEffect::Concurrency(c) if who.is_some() => format!("only {c} workers"),
        FaultEffect::Concurrency(c) => format!("the server has only {c} workers"),
    };
    let at = match (who, f.replica) {
        (None, None) => String::new(),
        (None, Some(k)) => format!(" at replica {k}"),
        (Some(w), None) => format!(" at {w}"),
        (Some(w), Some(k)) => format!(" at {w}, replica {k},"),
    };
    format!(
        "Fault{at} from {} to {}: {effect}.",
        f.from - SimTime::ZERO,
        f.to - SimTime::ZERO
    )
}
