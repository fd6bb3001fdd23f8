//! Rules of the scenario format: [`RawScenario`] -> [`Scenario`], collecting every problem.
//!
//! Each rule is checked once, here, and reported with its JSON path, the rule, the value seen
//! and the fix. Defaults are filled in here too (and only here), so `scenario.resolved.json`
//! shows exactly what ran.

use crate::engine::{SimDuration, SimTime};
use crate::model::{
    Backoff, BreakerConfig, BreakerMode, BreakerWindow, BudgetConfig, BudgetKind, Discipline, Dist,
    Fault, FaultEffect, Faults, Jitter, Outage, Outcome, OutcomeSet, QueueConfig, RateLimit,
    RateProfile, RateStep, Scope,
};

use super::error::{Problem, num, short};
use super::schema::*;
use super::units::parse_duration;
use super::{
    Clients, ClosedWorkload, Limits, Network, Policy, RetryAfter, RetryPolicy, Scenario, Server,
    ServerKind, Service, Workload,
};

/// Most clients of a closed workload: each has its first request scheduled from the start, so
/// memory grows with the count whatever `limits.max_in_flight` says (about 1.2 GB a replication
/// in progress at the bound).
pub const MAX_CLOSED_CLIENTS: u32 = 10_000_000;
/// Default number of attempts, including the first.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Default number of time-series buckets over `duration`.
pub const DEFAULT_BUCKETS: u64 = 200;

// Bounds that keep every number a run computes finite and simulated time far from its end
// (a u64 of nanoseconds, about 584 years). Durations are bounded in `units`.

/// The largest finite `policy.retry.max_attempts`.
pub const MAX_ATTEMPTS: u64 = 1000;
/// The largest rate per second: one event per nanosecond, the resolution of simulated time.
pub const MAX_RATE: f64 = 1e9;
/// The largest token count, quota or cost of a budget or rate limit.
pub const MAX_AMOUNT: f64 = 1e9;
/// The largest service-time factor of a fault window.
pub const MAX_SERVICE_TIME_FACTOR: f64 = 1000.0;
/// The largest `server.slowdown_per_inflight` (it is added once per attempt in service).
pub const MAX_SLOWDOWN: SimDuration = SimDuration::from_secs(10);
/// How far a log-normal draw may reach eight standard deviations up, median * e^(8 sigma):
/// 10^9 s, about 32 years. A draw beyond it comes less than once in 10^15.
pub const MAX_LOGNORMAL_REACH_SECS: f64 = 1e9;

/// The name a sweep axis gets without a `label`: its path's last two keys (and the list
/// indices among or just before them), joined by spaces, with underscores read as spaces.
/// "clients.count" -> "clients count", "policy.retry.max_attempts" -> "retry max attempts",
/// "server.faults.0.to" -> "faults 0 to". Never empty: a path without keys gives "sweep value".
pub fn label_from_path(path: &str) -> String {
    let mut keys = Vec::new();
    let mut named = 0;
    for key in path.split('.').rev() {
        let index = !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit());
        if named == 2 && !index {
            break;
        }
        if !key.is_empty() {
            keys.push(key.replace('_', " "));
        }
        named += usize::from(!index);
    }
    keys.reverse();
    let label = keys.join(" ");
    if label.trim().is_empty() {
        "sweep value".to_string()
    } else {
        label
    }
}

/// Collects problems while building validated values.
#[derive(Default)]
pub(super) struct Checker {
    pub problems: Vec<Problem>,
}

impl Checker {
    pub fn err(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(Problem::new(path, message));
    }

    /// Whether a problem was reported at `path` or inside it. A rule that reads a value which
    /// already failed is skipped: its message would only repeat the first in other words.
    fn failed(&self, path: &str) -> bool {
        self.problems.iter().any(|p| {
            p.path
                .strip_prefix(path)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        })
    }

    /// The duration, or `None` (with a problem) when it cannot be read.
    fn duration(&mut self, path: &str, d: &DurationText) -> Option<SimDuration> {
        parse_duration(&d.0).map_err(|e| self.err(path, e)).ok()
    }

    /// The duration, or `None` (with a problem) when it cannot be read or is zero.
    fn positive_duration(&mut self, path: &str, d: &DurationText) -> Option<SimDuration> {
        let value = self.duration(path, d)?;
        if value == SimDuration::ZERO {
            self.err(
                path,
                format!("must be longer than zero (got {})", short(&d.0)),
            );
            return None;
        }
        Some(value)
    }

    fn probability(&mut self, path: &str, p: Option<f64>) -> f64 {
        let p = p.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&p) {
            self.err(
                path,
                format!(
                    "must be a probability between 0 and 1 (got {}); write 5 % as 0.05",
                    num(p)
                ),
            );
            return 0.0;
        }
        p
    }

    fn rate(&mut self, path: &str, r: f64) -> f64 {
        if !(0.0..=MAX_RATE).contains(&r) {
            self.err(
                path,
                format!(
                    "must be a rate per second >= 0 and at most 1e9, one per nanosecond of simulated time (got {})",
                    num(r)
                ),
            );
            return 0.0;
        }
        r
    }

    fn positive_number(&mut self, path: &str, x: f64) {
        if !(x > 0.0 && x <= MAX_AMOUNT) {
            self.err(
                path,
                format!("must be a number > 0 and at most 1e9 (got {})", num(x)),
            );
        }
    }

    fn non_negative(&mut self, path: &str, x: f64) {
        if !(0.0..=MAX_AMOUNT).contains(&x) {
            self.err(
                path,
                format!("must be a number >= 0 and at most 1e9 (got {})", num(x)),
            );
        }
    }

    fn count_u32(&mut self, path: &str, n: u64, min: u64) -> u32 {
        if n < min {
            self.err(path, format!("must be at least {min} (got {n})"));
            return min as u32;
        }
        u32::try_from(n).unwrap_or_else(|_| {
            self.err(path, format!("must be at most {} (got {n})", u32::MAX));
            min as u32
        })
    }

    fn dist(&mut self, path: &str, d: &RawDist) -> Dist {
        match d {
            RawDist::Constant(v) => Dist::Constant(
                self.duration(&format!("{path}.constant"), v)
                    .unwrap_or_default(),
            ),
            RawDist::Exponential { mean } => {
                match self.positive_duration(&format!("{path}.exponential.mean"), mean) {
                    Some(mean) => Dist::exponential(mean),
                    None => Dist::ZERO,
                }
            }
            RawDist::Uniform { min, max } => {
                let lo = self.duration(&format!("{path}.uniform.min"), min);
                let hi = self.duration(&format!("{path}.uniform.max"), max);
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Dist::ZERO;
                };
                if lo > hi {
                    self.err(
                        &format!("{path}.uniform"),
                        format!("min must not exceed max (got min {lo}, max {hi})"),
                    );
                    return Dist::ZERO;
                }
                Dist::Uniform { min: lo, max: hi }
            }
            RawDist::Normal { mean, sd } => {
                let mean = self.duration(&format!("{path}.normal.mean"), mean);
                let sd = self.duration(&format!("{path}.normal.sd"), sd);
                Dist::normal(mean.unwrap_or_default(), sd.unwrap_or_default())
            }
            RawDist::Lognormal { median, sigma } => {
                let median = self.positive_duration(&format!("{path}.lognormal.median"), median);
                if !sigma.is_finite() || *sigma < 0.0 {
                    self.err(
                        &format!("{path}.lognormal.sigma"),
                        format!("must be a number >= 0 (got {})", num(*sigma)),
                    );
                    return Dist::ZERO;
                }
                let Some(median) = median else {
                    return Dist::ZERO;
                };
                let reach = median.as_secs_f64() * (8.0 * sigma).exp();
                if !(0.0..=MAX_LOGNORMAL_REACH_SECS).contains(&reach) {
                    self.err(
                        &format!("{path}.lognormal.sigma"),
                        format!(
                            "is too large for median {median} (got {}): eight standard deviations up, median * e^(8 sigma) is {}s, and must be at most 1e9s (about 32 years) so that no draw comes near the end of simulated time; lower sigma or the median",
                            num(*sigma),
                            num(reach)
                        ),
                    );
                    return Dist::ZERO;
                }
                Dist::lognormal(median, *sigma)
            }
            RawDist::Mixture(parts) => {
                let path = format!("{path}.mixture");
                if parts.is_empty() {
                    self.err(&path, "needs at least one component");
                    return Dist::ZERO;
                }
                let before = self.problems.len();
                let parts: Vec<(f64, Dist)> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, part)| {
                        let p = format!("{path}[{i}]");
                        if !(part.weight.is_finite() && part.weight > 0.0) {
                            self.err(
                                &format!("{p}.weight"),
                                format!("must be a positive number (got {})", num(part.weight)),
                            );
                        }
                        (part.weight, self.dist(&format!("{p}.dist"), &part.dist))
                    })
                    .collect();
                if self.problems.len() > before {
                    return Dist::ZERO;
                }
                // Component i is drawn with probability w_i / sum: a sum that overflows would
                // leave every probability 0 but the last.
                let total: f64 = parts.iter().map(|(w, _)| w).sum();
                if !total.is_finite() {
                    self.err(
                        &path,
                        "the weights must have a finite sum (these add up to more than 1.8e308); weights are relative, so divide them all by the same number",
                    );
                    return Dist::ZERO;
                }
                Dist::mixture(parts)
            }
        }
    }
}

/// Validates one merged scenario document (base, sweep value and variant patch applied).
pub(super) fn validate(raw: &RawScenario) -> Result<Scenario, Vec<Problem>> {
    let mut c = Checker::default();
    // Values that cannot be read are `None` here, and the rules that compare them with
    // others are skipped: one mistake, one message.
    let duration = c.positive_duration("duration", &raw.duration);
    let max_time = raw.max_time.as_ref().and_then(|d| {
        let t = c.positive_duration("max_time", d)?;
        if let Some(duration) = duration
            && t < duration
        {
            c.err(
                "max_time",
                format!("must not be shorter than duration (got {t}, duration {duration})"),
            );
        }
        Some(t)
    });
    let bucket = match raw.metrics.as_ref().and_then(|m| m.bucket.as_ref()) {
        Some(b) => c.positive_duration("metrics.bucket", b),
        None => duration.map(|d| SimDuration::from_nanos((d.as_nanos() / DEFAULT_BUCKETS).max(1))),
    };
    if let (Some(duration), Some(bucket)) = (duration, bucket)
        && duration.as_nanos() / bucket.as_nanos() > 1_000_000
    {
        c.err(
            "metrics.bucket",
            format!(
                "gives more than a million buckets over duration {duration} (got {bucket}); use a wider bucket"
            ),
        );
    }
    let clients = clients(&mut c, &raw.clients);
    let network = Network {
        latency: raw
            .network
            .as_ref()
            .and_then(|n| n.latency.as_ref())
            .map_or(Dist::ZERO, |d| c.dist("network.latency", d)),
    };
    let default_server = RawServer::default();
    let server = server(
        &mut c,
        raw.server.as_ref().unwrap_or(&default_server),
        duration,
    );
    let default_policy = RawPolicy::default();
    let policy = policy(&mut c, raw.policy.as_ref().unwrap_or(&default_policy));
    let limits = Limits {
        max_events: raw
            .limits
            .as_ref()
            .and_then(|l| l.max_events)
            .unwrap_or(Limits::DEFAULT_MAX_EVENTS),
        max_in_flight: raw
            .limits
            .as_ref()
            .and_then(|l| l.max_in_flight)
            .unwrap_or(Limits::DEFAULT_MAX_IN_FLIGHT),
    };
    if limits.max_events == 0 {
        c.err("limits.max_events", "must be at least 1 (got 0)");
    }
    if limits.max_in_flight == 0 {
        c.err("limits.max_in_flight", "must be at least 1 (got 0)");
    }
    if matches!(clients.workload, Workload::Closed(_))
        && !c.failed("clients.count")
        && !c.failed("limits.max_in_flight")
        && u64::from(clients.count) > limits.max_in_flight
    {
        c.err(
            "clients.count",
            format!(
                "a closed workload keeps a request of every client in flight, so {} clients exceed limits.max_in_flight = {}; raise the limit if the machine has the memory",
                clients.count, limits.max_in_flight
            ),
        );
    }
    if matches!(clients.workload, Workload::Closed(_))
        && !c.failed("clients.count")
        && clients.count > MAX_CLOSED_CLIENTS
    {
        c.err(
            "clients.count",
            format!(
                "a closed workload schedules every client's first request at the start (about 115 bytes per client for each replication in progress), so it takes at most {MAX_CLOSED_CLIENTS} clients (got {}); an open workload has no such bound",
                clients.count
            ),
        );
    }
    // Written, even if it failed: a timeout with a mistake in it is still meant as a timeout.
    let gives_up = raw
        .policy
        .as_ref()
        .is_some_and(|p| p.timeout.is_some() || p.deadline.is_some());
    if !gives_up {
        let faults = raw.server.as_ref().and_then(|s| s.faults.as_deref());
        for (i, f) in faults.unwrap_or_default().iter().enumerate() {
            if f.outage == Some(RawOutage::Drop) {
                c.err(
                    &format!("server.faults[{i}].outage"),
                    "\"drop\" never answers, so it needs policy.timeout or policy.deadline: without one the clients would wait for ever; use \"reject\" for an outage that answers",
                );
            }
        }
    }
    if let Workload::Closed(closed) = &clients.workload
        && closed.requests_per_client.is_none()
        && closed.think_time.is_zero()
        && !c.failed("clients.workload.closed.think_time")
        && policy
            .breaker
            .is_some_and(|b| b.mode == crate::model::BreakerMode::All)
    {
        c.err(
            "clients.workload.closed.think_time",
            "must be longer than zero with a circuit breaker in mode \"all\" and no requests_per_client: an open breaker ends a request at once, so each client would start the next at the same instant without end; set a think time or requests_per_client",
        );
    }
    if c.problems.is_empty() {
        Ok(Scenario {
            // Without a problem, every value was read.
            duration: duration.unwrap_or_default(),
            max_time,
            bucket: bucket.unwrap_or_default(),
            clients,
            network,
            services: vec![Service {
                name: "server".to_owned(),
                server,
                calls: Vec::new(),
                parallel: false,
            }],
            policy,
            limits,
        })
    } else {
        Err(c.problems)
    }
}

fn clients(c: &mut Checker, raw: &RawClients) -> Clients {
    let count = c.count_u32("clients.count", raw.count, 1);
    let workload = match &raw.workload {
        RawWorkload::Open(open) => {
            let base = c.rate("clients.workload.open.rate_per_s", open.rate_per_s);
            let mut steps = Vec::new();
            let mut last_at: Option<SimDuration> = None;
            for (i, step) in open.profile.iter().flatten().enumerate() {
                let p = format!("clients.workload.open.profile[{i}]");
                let at = c.duration(&format!("{p}.at"), &step.at);
                if let (Some(prev), Some(at)) = (last_at, at)
                    && at <= prev
                {
                    c.err(
                        &format!("{p}.at"),
                        format!("must be later than the previous point (got {at} after {prev})"),
                    );
                }
                // A point that cannot be read is compared with nothing, before or after.
                last_at = at;
                let rate_per_s = c.rate(&format!("{p}.rate_per_s"), step.rate_per_s);
                steps.push(RateStep {
                    at: at.unwrap_or_default(),
                    rate_per_s,
                    ramp: step.ramp.unwrap_or(false),
                });
            }
            Workload::Open(RateProfile::new(base, steps))
        }
        RawWorkload::Closed(closed) => {
            let path = "clients.workload.closed";
            if closed.requests_per_client == Some(0) {
                c.err(
                    &format!("{path}.requests_per_client"),
                    "must be at least 1 (got 0); omit it to keep clients busy until duration",
                );
            }
            Workload::Closed(ClosedWorkload {
                requests_per_client: closed.requests_per_client,
                think_time: closed
                    .think_time
                    .as_ref()
                    .map_or(Dist::ZERO, |d| c.dist(&format!("{path}.think_time"), d)),
                start: closed
                    .start
                    .as_ref()
                    .map_or(Dist::ZERO, |d| c.dist(&format!("{path}.start"), d)),
            })
        }
    };
    Clients { count, workload }
}

fn server(c: &mut Checker, raw: &RawServer, duration: Option<SimDuration>) -> Server {
    let permanent_error_rate =
        c.probability("server.permanent_error_rate", raw.permanent_error_rate);
    if raw.kind == Some(RawServerKind::Occ) {
        let queue_only = [
            ("concurrency", raw.concurrency.is_some()),
            ("queue_limit", raw.queue_limit.is_some()),
            ("discipline", raw.discipline.is_some()),
            ("service_time", raw.service_time.is_some()),
            ("slowdown_per_inflight", raw.slowdown_per_inflight.is_some()),
            ("error_rate", raw.error_rate.is_some()),
            ("drop_expired", raw.drop_expired.is_some()),
            ("rate_limit", raw.rate_limit.is_some()),
            ("faults", raw.faults.as_ref().is_some_and(|f| !f.is_empty())),
        ];
        for (key, _) in queue_only.iter().filter(|(_, set)| *set) {
            c.err(
                &format!("server.{key}"),
                "applies to a queue server only; an occ server is one row whose reads are instant and whose writes conflict",
            );
        }
        return Server {
            kind: ServerKind::Occ,
            permanent_error_rate,
            faults: Faults::default(),
            rate_limit: None,
        };
    }
    let concurrency = match raw.concurrency {
        None => Some(1),
        Some(Count::Unlimited(_)) => None,
        Some(Count::Finite(n)) => Some(c.count_u32("server.concurrency", n, 1)),
    };
    let queue_limit = match raw.queue_limit {
        None | Some(Count::Unlimited(_)) => None,
        Some(Count::Finite(n)) => Some(c.count_u32("server.queue_limit", n, 0)),
    };
    let service_time = match &raw.service_time {
        Some(d) => c.dist("server.service_time", d),
        None => {
            c.err(
                "server.service_time",
                "is required for a queue server, e.g. {\"exponential\": {\"mean\": \"10ms\"}}",
            );
            Dist::ZERO
        }
    };
    let slowdown_per_inflight = raw
        .slowdown_per_inflight
        .as_ref()
        .and_then(|d| c.duration("server.slowdown_per_inflight", d))
        .unwrap_or_default();
    if slowdown_per_inflight > MAX_SLOWDOWN {
        c.err(
            "server.slowdown_per_inflight",
            format!(
                "must be at most 10s (got {slowdown_per_inflight}): it is added once for every attempt in service, so a longer one would run simulated time out"
            ),
        );
    }
    Server {
        kind: ServerKind::Queue(QueueConfig {
            concurrency,
            queue_limit,
            discipline: match raw.discipline {
                Some(RawDiscipline::Lifo) => Discipline::Lifo,
                _ => Discipline::Fifo,
            },
            service_time,
            slowdown_per_inflight,
            error_rate: c.probability("server.error_rate", raw.error_rate),
            drop_expired: raw.drop_expired.unwrap_or(false),
        }),
        permanent_error_rate,
        faults: faults(c, raw.faults.as_deref().unwrap_or_default(), duration),
        rate_limit: raw.rate_limit.as_ref().map(|r| rate_limit(c, r)),
    }
}

fn faults(c: &mut Checker, raw: &[RawFault], duration: Option<SimDuration>) -> Faults {
    let mut windows = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let p = format!("server.faults[{i}]");
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
        match effects.as_slice() {
            [effect] => windows.push(Fault {
                from: SimTime::ZERO + from.unwrap_or_default(),
                to: SimTime::ZERO + to.unwrap_or_default(),
                effect: *effect,
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

fn policy(c: &mut Checker, raw: &RawPolicy) -> Policy {
    let timeout = raw
        .timeout
        .as_ref()
        .and_then(|d| c.positive_duration("policy.timeout", d));
    let deadline = raw
        .deadline
        .as_ref()
        .and_then(|d| c.positive_duration("policy.deadline", d));
    let default_retry = RawRetry::default();
    let retry = raw.retry.as_ref().unwrap_or(&default_retry);
    let max_attempts = match retry.max_attempts {
        None => Some(DEFAULT_MAX_ATTEMPTS),
        Some(Count::Unlimited(_)) => None,
        Some(Count::Finite(0)) => {
            c.err(
                "policy.retry.max_attempts",
                "must be at least 1 (got 0); it counts the first attempt, so 1 means no retries",
            );
            Some(1)
        }
        Some(Count::Finite(n)) if n > MAX_ATTEMPTS => {
            c.err(
                "policy.retry.max_attempts",
                format!(
                    "must be at most 1000 (got {n}), so that a request's retries cannot outlast simulated time; write \"unlimited\" for no limit"
                ),
            );
            None
        }
        Some(Count::Finite(n)) => Some(c.count_u32("policy.retry.max_attempts", n, 1)),
    };
    let retry_on = match &retry.retry_on {
        None => OutcomeSet::default_retryable(),
        Some(list) => {
            for (i, o) in list.iter().enumerate() {
                if matches!(o, RawAttemptOutcome::Success | RawAttemptOutcome::Permanent) {
                    c.err(
                        &format!("policy.retry.retry_on[{i}]"),
                        format!(
                            "{} is never retried; list only timeout, error, rejected, throttled or conflict",
                            attempt_outcome(*o)
                        ),
                    );
                }
            }
            list.iter().map(|o| attempt_outcome(*o)).collect()
        }
    };
    let backoff = match &retry.backoff {
        None | Some(RawBackoff::None(_)) => Backoff::None,
        Some(RawBackoff::Exponential(e)) => {
            let p = "policy.retry.backoff";
            let base = c.duration(&format!("{p}.base"), &e.base);
            let cap = c.duration(&format!("{p}.cap"), &e.cap);
            let multiplier = e.multiplier.unwrap_or(2.0);
            if !multiplier.is_finite() || multiplier < 1.0 {
                c.err(
                    &format!("{p}.multiplier"),
                    format!(
                        "must be a number >= 1 (got {}); backoff never shrinks",
                        num(multiplier)
                    ),
                );
            }
            if let (Some(base), Some(cap)) = (base, cap)
                && cap < base
            {
                c.err(
                    &format!("{p}.cap"),
                    format!("must not be shorter than base (got cap {cap}, base {base})"),
                );
            }
            let jitter = match e.jitter {
                RawJitter::None => Jitter::None,
                RawJitter::Full => Jitter::Full,
                RawJitter::Equal => Jitter::Equal,
                RawJitter::Decorrelated => Jitter::Decorrelated,
            };
            if jitter == Jitter::Decorrelated && base == Some(SimDuration::ZERO) {
                c.err(
                    &format!("{p}.base"),
                    "must be longer than zero for decorrelated jitter, which grows from base",
                );
            }
            Backoff::Exponential {
                base: base.unwrap_or_default(),
                multiplier,
                cap: cap.unwrap_or_default(),
                jitter,
            }
        }
    };
    Policy {
        timeout,
        deadline,
        budget: raw.budget.as_ref().map(|b| budget(c, b)),
        breaker: raw.breaker.as_ref().map(|b| breaker(c, b)),
        retry: RetryPolicy {
            max_attempts,
            retry_on,
            backoff,
            retry_after: match retry.retry_after {
                Some(RawRetryAfter::Ignore) => RetryAfter::Ignore,
                _ => RetryAfter::Honor,
            },
        },
        bulkhead: None,
        fallback: None,
        propagate_deadline: false,
    }
}

fn scope(s: Option<RawScope>) -> Scope {
    match s {
        Some(RawScope::Shared) => Scope::Shared,
        _ => Scope::PerClient,
    }
}

fn budget(c: &mut Checker, raw: &RawBudget) -> BudgetConfig {
    let p = "policy.budget";
    let set = [
        raw.token_bucket.is_some(),
        raw.retry_quota.is_some(),
        raw.ratio.is_some(),
    ];
    let count = set.iter().filter(|s| **s).count();
    if count != 1 {
        c.err(
            p,
            format!(
                "needs exactly one of \"token_bucket\", \"retry_quota\" or \"ratio\" (got {count})"
            ),
        );
    }
    let kind = if let Some(t) = &raw.token_bucket {
        let q = format!("{p}.token_bucket");
        c.positive_number(&format!("{q}.max_tokens"), t.max_tokens);
        c.non_negative(&format!("{q}.token_ratio"), t.token_ratio);
        BudgetKind::TokenBucket {
            max_tokens: t.max_tokens,
            token_ratio: t.token_ratio,
        }
    } else if let Some(r) = &raw.retry_quota {
        let q = format!("{p}.retry_quota");
        let initial = r.initial.unwrap_or(500.0);
        c.positive_number(&format!("{q}.initial"), initial);
        let retry_cost = r.retry_cost.unwrap_or(5.0);
        c.non_negative(&format!("{q}.retry_cost"), retry_cost);
        let timeout_cost = r.timeout_cost.unwrap_or(10.0);
        c.non_negative(&format!("{q}.timeout_cost"), timeout_cost);
        let success_refund = r.success_refund.unwrap_or(1.0);
        c.non_negative(&format!("{q}.success_refund"), success_refund);
        BudgetKind::RetryQuota {
            initial,
            retry_cost,
            timeout_cost,
            success_refund,
        }
    } else if let Some(r) = &raw.ratio {
        let q = format!("{p}.ratio");
        if !(0.0..=1.0).contains(&r.percent) {
            c.err(
                &format!("{q}.percent"),
                format!(
                    "must be a fraction between 0 and 1 (got {}); write 10 % as 0.1",
                    num(r.percent)
                ),
            );
        }
        let min_per_s = r.min_per_s.unwrap_or(0.0);
        c.non_negative(&format!("{q}.min_per_s"), min_per_s);
        let window = r.window.as_ref().map_or(SimDuration::from_secs(10), |w| {
            c.positive_duration(&format!("{q}.window"), w)
                .unwrap_or_default()
        });
        BudgetKind::Ratio {
            percent: r.percent,
            min_per_s,
            window,
        }
    } else {
        BudgetKind::TokenBucket {
            max_tokens: 1.0,
            token_ratio: 0.0,
        }
    };
    BudgetConfig {
        kind,
        scope: scope(raw.scope),
    }
}

fn breaker(c: &mut Checker, raw: &RawBreaker) -> BreakerConfig {
    let p = "policy.breaker";
    let window = match &raw.window {
        None => BreakerWindow::Count(100),
        Some(w) => match (w.count, &w.time) {
            (Some(n), None) => {
                BreakerWindow::Count(c.count_u32(&format!("{p}.window.count"), n, 1))
            }
            (None, Some(d)) => BreakerWindow::Time(
                c.positive_duration(&format!("{p}.window.time"), d)
                    .unwrap_or_default(),
            ),
            _ => {
                c.err(
                    &format!("{p}.window"),
                    "needs exactly one of {\"count\": n} (the last n calls) or {\"time\": D} (the calls of the last D)",
                );
                BreakerWindow::Count(100)
            }
        },
    };
    let threshold = |c: &mut Checker, key: &str, v: Option<f64>, default: f64| {
        let v = v.unwrap_or(default);
        if !(v > 0.0 && v <= 1.0) {
            c.err(
                &format!("{p}.{key}"),
                format!(
                    "must be a rate above 0 and at most 1 (got {}); write 50 % as 0.5",
                    num(v)
                ),
            );
        }
        v
    };
    let failure_rate_threshold =
        threshold(c, "failure_rate_threshold", raw.failure_rate_threshold, 0.5);
    let slow_call = if raw.slow_call_duration.is_some() || raw.slow_call_rate_threshold.is_some() {
        let duration = raw
            .slow_call_duration
            .as_ref()
            .map_or(SimDuration::from_secs(60), |d| {
                c.positive_duration(&format!("{p}.slow_call_duration"), d)
                    .unwrap_or_default()
            });
        let rate = threshold(
            c,
            "slow_call_rate_threshold",
            raw.slow_call_rate_threshold,
            1.0,
        );
        Some((duration, rate))
    } else {
        None
    };
    let minimum_calls = c.count_u32(
        &format!("{p}.minimum_calls"),
        raw.minimum_calls.unwrap_or(100),
        1,
    );
    // A count window of n never holds more than n results, so (as Resilience4j does) at
    // most n are awaited: the value that runs, and that resolved.json and report.md show.
    let minimum_calls = match window {
        BreakerWindow::Count(n) => minimum_calls.min(n),
        BreakerWindow::Time(_) => minimum_calls,
    };
    BreakerConfig {
        window,
        failure_rate_threshold,
        minimum_calls,
        open_duration: raw
            .open_duration
            .as_ref()
            .map_or(SimDuration::from_secs(60), |d| {
                c.positive_duration(&format!("{p}.open_duration"), d)
                    .unwrap_or_default()
            }),
        half_open_calls: c.count_u32(
            &format!("{p}.half_open_calls"),
            raw.half_open_calls.unwrap_or(10),
            1,
        ),
        slow_call,
        mode: match raw.mode {
            Some(RawBreakerMode::Retries) => BreakerMode::Retries,
            _ => BreakerMode::All,
        },
        scope: scope(raw.scope),
    }
}

fn rate_limit(c: &mut Checker, raw: &RawRateLimit) -> RateLimit {
    let p = "server.rate_limit";
    let rate_per_s = c.rate(&format!("{p}.rate_per_s"), raw.rate_per_s);
    if !(1.0..=MAX_AMOUNT).contains(&raw.burst) {
        c.err(
            &format!("{p}.burst"),
            format!(
                "must be at least 1 and at most 1e9 (got {}); it is how many attempts pass at once",
                num(raw.burst)
            ),
        );
    }
    RateLimit {
        rate_per_s,
        burst: raw.burst,
        retry_after: raw
            .retry_after
            .as_ref()
            .and_then(|d| c.duration(&format!("{p}.retry_after"), d)),
    }
}

fn attempt_outcome(o: RawAttemptOutcome) -> Outcome {
    match o {
        RawAttemptOutcome::Success => Outcome::Success,
        RawAttemptOutcome::Error => Outcome::Error,
        RawAttemptOutcome::Rejected => Outcome::Rejected,
        RawAttemptOutcome::Throttled => Outcome::Throttled,
        RawAttemptOutcome::Timeout => Outcome::Timeout,
        RawAttemptOutcome::Conflict => Outcome::Conflict,
        RawAttemptOutcome::Permanent => Outcome::Permanent,
    }
}
