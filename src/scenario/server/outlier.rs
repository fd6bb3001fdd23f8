//! `outlier_detection` of a server with replicas (or a service of a call graph), in one
//! place: the raw setting a scenario file writes, the checked
//! [`OutlierConfig`](crate::model::OutlierConfig), the rules and Envoy's defaults between
//! them (validation writes the defaults back into the raw setting), and its words in
//! report.md. The detector itself is `crate::model::outlier`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::SimDuration;
use crate::model::OutlierConfig;
use crate::scenario::check::{Checker, written};
use crate::scenario::schema::DurationText;

/// Envoy's `consecutive_5xx` by default.
pub const DEFAULT_CONSECUTIVE_5XX: u32 = 5;
/// Envoy's `interval` by default.
pub const DEFAULT_INTERVAL: SimDuration = SimDuration::from_secs(10);
/// Envoy's `base_ejection_time` by default.
pub const DEFAULT_BASE_EJECTION_TIME: SimDuration = SimDuration::from_secs(30);
/// Envoy's `max_ejection_time` by default (or the base ejection time, if longer).
pub const DEFAULT_MAX_EJECTION_TIME: SimDuration = SimDuration::from_secs(300);
/// Envoy's `max_ejection_percent` by default.
pub const DEFAULT_MAX_EJECTION_PERCENT: u32 = 10;

/// `outlier_detection`: Envoy's consecutive-failure outlier detection by each caller.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOutlierDetection {
    /// Consecutive 5xx answers (`error`, `rejected`, `timeout`) that eject a replica
    /// (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = u32::MAX))]
    pub consecutive_5xx: Option<u64>,
    /// Consecutive gateway failures (`rejected`, `timeout`) that eject a replica; unset,
    /// they eject none (Envoy counts them but enforces 0 % by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = u32::MAX))]
    pub consecutive_gateway_failure: Option<u64>,
    /// Time between the detector's ticks, which let replicas back (default "10s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<DurationText>,
    /// A first ejection's length; the n-th in a row lasts n times it (default "30s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ejection_time: Option<DurationText>,
    /// The longest ejection (default "300s", or `base_ejection_time` if longer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ejection_time: Option<DurationText>,
    /// The largest share of the replicas ejected at once, in percent (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub max_ejection_percent: Option<u64>,
    /// Eject one replica even where `max_ejection_percent` rounds to none (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_eject_one_host: Option<bool>,
}

/// `outlier_detection` of the server at `at` with `replicas` replicas; each default is
/// written back.
pub(in crate::scenario) fn check(
    c: &mut Checker,
    at: &str,
    raw: Option<&mut RawOutlierDetection>,
    replicas: u32,
) -> Option<OutlierConfig> {
    let raw = raw?;
    let p = format!("{at}.outlier_detection");
    if replicas == 1 {
        c.err(
            &p,
            "needs a pool to eject from (got replicas 1): set \"replicas\" above 1, or remove outlier_detection",
        );
    }
    let count = |c: &mut Checker, key: &str, n: u64| c.count_u32(&format!("{p}.{key}"), n, 1);
    let consecutive_5xx = match raw.consecutive_5xx {
        Some(n) => count(c, "consecutive_5xx", n),
        None => DEFAULT_CONSECUTIVE_5XX,
    };
    raw.consecutive_5xx = Some(u64::from(consecutive_5xx));
    let consecutive_gateway_failure = raw
        .consecutive_gateway_failure
        .map(|n| count(c, "consecutive_gateway_failure", n));
    let duration = |c: &mut Checker, key: &str, d: &mut Option<DurationText>, default| {
        let d = d.get_or_insert_with(|| written(default));
        c.positive_duration(&format!("{p}.{key}"), d)
            .unwrap_or(default)
    };
    let interval = duration(c, "interval", &mut raw.interval, DEFAULT_INTERVAL);
    let base = duration(
        c,
        "base_ejection_time",
        &mut raw.base_ejection_time,
        DEFAULT_BASE_EJECTION_TIME,
    );
    let max = duration(
        c,
        "max_ejection_time",
        &mut raw.max_ejection_time,
        DEFAULT_MAX_EJECTION_TIME.max(base),
    );
    if max < base {
        c.err(
            &format!("{p}.max_ejection_time"),
            format!(
                "must be at least base_ejection_time ({base}) (got {max}): an ejection lasts base x its multiplier, capped at max"
            ),
        );
    }
    let percent = *raw
        .max_ejection_percent
        .get_or_insert(u64::from(DEFAULT_MAX_EJECTION_PERCENT));
    if percent > 100 {
        c.err(
            &format!("{p}.max_ejection_percent"),
            format!("must be at most 100 (got {percent}): it is a share of the replicas"),
        );
    }
    Some(OutlierConfig {
        consecutive_5xx,
        consecutive_gateway_failure,
        interval,
        base_ejection_time: base,
        max_ejection_time: max.max(base),
        max_ejection_percent: percent.min(100) as u32,
        always_eject_one_host: *raw.always_eject_one_host.get_or_insert(false),
    })
}

/// Outlier detection in a sentence, for a service `who` (`None`: the one server).
pub(in crate::scenario) fn sentence(o: &OutlierConfig, who: Option<&str>) -> String {
    let gateway = o.consecutive_gateway_failure.map_or(String::new(), |g| {
        format!(" or {g} consecutive gateway failures (`rejected`, `timeout`)")
    });
    let one = if o.always_eject_one_host {
        ", or one when none is"
    } else {
        ""
    };
    format!(
        "Each caller ejects a replica{} from its balancer after {} consecutive 5xx answers (`error`, `rejected`, `timeout`){gateway}, for {} times its ejection multiplier (one more at each ejection, one less each healthy interval; at most {}), and lets it back at the first of its ticks, every {}, after that; at most {} % of the replicas are out at once{one}, and a caller with fewer than half of them in balances over all.",
        who.map_or(String::new(), |w| format!(" of {w}")),
        o.consecutive_5xx,
        o.base_ejection_time,
        o.max_ejection_time,
        o.interval,
        o.max_ejection_percent,
    )
}
