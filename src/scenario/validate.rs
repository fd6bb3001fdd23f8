//! Rules of the scenario format: [`RawScenario`] -> [`Scenario`], collecting every problem.
//!
//! Each rule is checked once, here, and reported with its JSON path, the rule, the value seen
//! and the fix. Defaults are filled in here too (and only here), so `scenario.resolved.json`
//! shows exactly what ran.

use crate::engine::SimDuration;
use crate::model::{
    Backoff, Discipline, Dist, Jitter, Outcome, OutcomeSet, QueueConfig, RateProfile, RateStep,
};

use super::error::Problem;
use super::schema::*;
use super::units::parse_duration;
use super::{
    Clients, ClosedWorkload, Limits, Network, Policy, RetryAfter, RetryPolicy, Scenario, Server,
    ServerKind, Workload,
};

/// Default number of attempts, including the first.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Default number of time-series buckets over `duration`.
pub const DEFAULT_BUCKETS: u64 = 200;

/// Collects problems while building validated values.
#[derive(Default)]
pub(super) struct Checker {
    pub problems: Vec<Problem>,
}

impl Checker {
    pub fn err(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(Problem::new(path, message));
    }

    /// A not-yet-supported feature: named clearly so nobody thinks it ran.
    fn unsupported(&mut self, path: &str, what: &str) {
        self.err(
            path,
            format!(
                "{what} is not supported yet by retrystorm {}; remove it to run this scenario",
                env!("CARGO_PKG_VERSION")
            ),
        );
    }

    fn duration(&mut self, path: &str, d: &DurationText) -> SimDuration {
        parse_duration(&d.0).unwrap_or_else(|e| {
            self.err(path, e);
            SimDuration::ZERO
        })
    }

    fn positive_duration(&mut self, path: &str, d: &DurationText) -> SimDuration {
        let value = self.duration(path, d);
        if value == SimDuration::ZERO && parse_duration(&d.0).is_ok() {
            self.err(path, format!("must be longer than zero (got {})", d.0));
        }
        value
    }

    fn probability(&mut self, path: &str, p: Option<f64>) -> f64 {
        let p = p.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&p) {
            self.err(
                path,
                format!("must be a probability between 0 and 1 (got {p}); write 5 % as 0.05"),
            );
            return 0.0;
        }
        p
    }

    fn rate(&mut self, path: &str, r: f64) -> f64 {
        if !r.is_finite() || r < 0.0 {
            self.err(path, format!("must be a rate per second >= 0 (got {r})"));
            return 0.0;
        }
        r
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
            RawDist::Constant(v) => Dist::Constant(self.duration(&format!("{path}.constant"), v)),
            RawDist::Exponential { mean } => {
                let mean = self.positive_duration(&format!("{path}.exponential.mean"), mean);
                if mean == SimDuration::ZERO {
                    return Dist::ZERO;
                }
                Dist::exponential(mean)
            }
            RawDist::Uniform { min, max } => {
                let lo = self.duration(&format!("{path}.uniform.min"), min);
                let hi = self.duration(&format!("{path}.uniform.max"), max);
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
                Dist::normal(mean, sd)
            }
            RawDist::Lognormal { median, sigma } => {
                let median = self.positive_duration(&format!("{path}.lognormal.median"), median);
                if !sigma.is_finite() || *sigma < 0.0 {
                    self.err(
                        &format!("{path}.lognormal.sigma"),
                        format!("must be a number >= 0 (got {sigma})"),
                    );
                    return Dist::ZERO;
                }
                if median == SimDuration::ZERO {
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
                        if !part.weight.is_finite() || part.weight <= 0.0 {
                            self.err(
                                &format!("{p}.weight"),
                                format!("must be a positive number (got {})", part.weight),
                            );
                        }
                        (part.weight, self.dist(&format!("{p}.dist"), &part.dist))
                    })
                    .collect();
                if self.problems.len() > before {
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
    let duration = c.positive_duration("duration", &raw.duration);
    let max_time = raw.max_time.as_ref().map(|d| {
        let t = c.positive_duration("max_time", d);
        if t < duration {
            c.err(
                "max_time",
                format!("must not be shorter than duration (got {t}, duration {duration})"),
            );
        }
        t
    });
    let bucket = match raw.metrics.as_ref().and_then(|m| m.bucket.as_ref()) {
        Some(b) => c.positive_duration("metrics.bucket", b),
        None => SimDuration::from_nanos((duration.as_nanos() / DEFAULT_BUCKETS).max(1)),
    };
    if bucket > SimDuration::ZERO && duration.as_nanos() / bucket.as_nanos().max(1) > 1_000_000 {
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
    let server = server(&mut c, raw.server.as_ref().unwrap_or(&default_server));
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
    if c.problems.is_empty() {
        Ok(Scenario {
            duration,
            max_time,
            bucket,
            clients,
            network,
            server,
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
                if let Some(prev) = last_at
                    && at <= prev
                {
                    c.err(
                        &format!("{p}.at"),
                        format!("must be later than the previous point (got {at} after {prev})"),
                    );
                }
                last_at = Some(at);
                let rate_per_s = c.rate(&format!("{p}.rate_per_s"), step.rate_per_s);
                steps.push(RateStep {
                    at,
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

fn server(c: &mut Checker, raw: &RawServer) -> Server {
    let permanent_error_rate =
        c.probability("server.permanent_error_rate", raw.permanent_error_rate);
    if raw.rate_limit.is_some() {
        c.unsupported("server.rate_limit", "a server rate limit");
    }
    if raw.faults.as_ref().is_some_and(|f| !f.is_empty()) {
        c.unsupported("server.faults", "a fault window");
    }
    if raw.kind == Some(RawServerKind::Occ) {
        let queue_only = [
            ("concurrency", raw.concurrency.is_some()),
            ("queue_limit", raw.queue_limit.is_some()),
            ("discipline", raw.discipline.is_some()),
            ("service_time", raw.service_time.is_some()),
            ("slowdown_per_inflight", raw.slowdown_per_inflight.is_some()),
            ("error_rate", raw.error_rate.is_some()),
            ("drop_expired", raw.drop_expired.is_some()),
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
        .map_or(SimDuration::ZERO, |d| {
            c.duration("server.slowdown_per_inflight", d)
        });
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
    }
}

fn policy(c: &mut Checker, raw: &RawPolicy) -> Policy {
    let timeout = raw
        .timeout
        .as_ref()
        .map(|d| c.positive_duration("policy.timeout", d));
    let deadline = raw
        .deadline
        .as_ref()
        .map(|d| c.positive_duration("policy.deadline", d));
    if raw.budget.is_some() {
        c.unsupported("policy.budget", "a retry budget");
    }
    if raw.breaker.is_some() {
        c.unsupported("policy.breaker", "a circuit breaker");
    }
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
                    format!("must be a number >= 1 (got {multiplier}); backoff never shrinks"),
                );
            }
            if cap < base {
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
            if jitter == Jitter::Decorrelated && base == SimDuration::ZERO {
                c.err(
                    &format!("{p}.base"),
                    "must be longer than zero for decorrelated jitter, which grows from base",
                );
            }
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                jitter,
            }
        }
    };
    Policy {
        timeout,
        deadline,
        retry: RetryPolicy {
            max_attempts,
            retry_on,
            backoff,
            retry_after: match retry.retry_after {
                Some(RawRetryAfter::Ignore) => RetryAfter::Ignore,
                _ => RetryAfter::Honor,
            },
        },
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
