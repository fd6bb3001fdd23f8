//! What theory predicts for a variant, where a closed form exists: queueing formulas for a
//! Poisson stream into a queue without retries (M/M/c by Erlang C, M/M/1/K, M/D/1 by
//! Pollaczek-Khinchine), and the amplification and success of retries against a server whose
//! errors do not depend on load (`sum f^k` attempts per request, success `1 - f^m`). report.md
//! prints them beside the simulated values, so a validation scenario shows its own check.
//!
//! Each formula applies only when the scenario is exactly its model: no faults, no rate limit,
//! no budget or breaker, no timeout or deadline that could cut an attempt short, one steady
//! rate. Anything else gets no theory rather than a wrong one.

use crate::metrics::{Metric, VariantResult};
use crate::model::{Dist, Outcome, QueueConfig, RateProfile};
use crate::scenario::{Scenario, ServerKind, Workload};

/// A prediction: what it is, the metric it is compared with, and the value, in the metric's
/// stored unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The formula in words.
    pub formula: &'static str,
    /// The metric compared.
    pub metric: Metric,
    /// The predicted value (stored unit: a share in [0, 1], milliseconds, a ratio).
    pub value: f64,
}

/// A prediction beside what a variant measured: a row of report.md's theory table and of
/// `theory.png`.
#[derive(Debug, Clone)]
pub struct Check<'a> {
    /// The variant's position in the run.
    pub variant: usize,
    /// Its results.
    pub result: &'a VariantResult,
    /// What theory predicts.
    pub prediction: Prediction,
    /// The simulated mean, in the metric's stored unit.
    pub mean: f64,
    /// Its 95 % half-width, in the stored unit.
    pub half: f64,
}

impl Check<'_> {
    /// Whether the prediction lies within the simulated mean's 95 % interval.
    pub fn inside(&self) -> bool {
        (self.mean - self.prediction.value).abs() <= self.half
    }
}

/// Every prediction for the variants `results` (each run from its scenario in `scenarios`),
/// beside what it measured, in the order of the variants.
pub fn checks<'a, 's>(
    scenarios: impl IntoIterator<Item = &'s Scenario>,
    results: &'a [VariantResult],
) -> Vec<Check<'a>> {
    let mut out = Vec::new();
    for (variant, (result, s)) in results.iter().zip(scenarios).enumerate() {
        for prediction in predictions(s) {
            let k = prediction.metric;
            let half = k
                .estimate(&result.metrics, &result.ci95)
                .map_or(0.0, |(_, h)| h / k.scale);
            out.push(Check {
                variant,
                result,
                mean: k.value(&result.metrics),
                half,
                prediction,
            });
        }
    }
    out
}

/// The closed forms that apply to `s`, possibly none.
pub fn predictions(s: &Scenario) -> Vec<Prediction> {
    // The closed forms describe one server; an entry with calls waits on them.
    if crate::report::shape::has_calls(s) {
        return Vec::new();
    }
    let ServerKind::Queue(q) = &s.server().kind else {
        return Vec::new();
    };
    // The closed forms describe one stream of requests under one policy.
    let [group] = &s.clients[..] else {
        return Vec::new();
    };
    let Workload::Open(profile) = &group.workload else {
        return Vec::new();
    };
    if !plain(s, q, profile) {
        return Vec::new();
    }
    let attempts = s.policy.retry.max_attempts;
    // Retries against errors that do not depend on load: nothing queues (unlimited workers),
    // so every attempt fails independently with probability f.
    if q.concurrency.is_none() && q.error_rate > 0.0 {
        let retries_on_error = s.policy.retry.retry_on.contains(Outcome::Error);
        let m = if retries_on_error { attempts } else { Some(1) };
        return independent_failures(q.error_rate, m);
    }
    // Queueing: one attempt per request, no network delay, a single steady Poisson stream.
    let (Some(c), Some(1)) = (q.concurrency, attempts) else {
        return Vec::new();
    };
    // A pool of replicas is as many queues as its balancer makes of it, not one M/M/c.
    if !s.network.latency.is_zero() || s.server().pool.replicas > 1 {
        return Vec::new();
    }
    queueing(q, profile.base_rate, f64::from(c))
}

/// Whether the scenario is exactly the model of a closed form: nothing that could cut an
/// attempt short, refuse or slow it, and one steady rate.
fn plain(s: &Scenario, q: &QueueConfig, profile: &RateProfile) -> bool {
    s.server().faults.windows().is_empty()
        && s.server().rate_limit.is_none()
        && s.server().permanent_error_rate == 0.0
        && s.policy.budget.is_none()
        && s.policy.breaker.is_none()
        && s.policy.timeout.is_none()
        && s.policy.deadline.is_none()
        && profile.steps.is_empty()
        && q.slowdown_per_inflight == crate::engine::SimDuration::ZERO
        && !q.drop_expired
}

/// Amplification and success when every attempt fails independently with probability `f`
/// and a request makes at most `attempts` of them (unlimited: `None`).
fn independent_failures(f: f64, attempts: Option<u32>) -> Vec<Prediction> {
    let (amplification, success) = match attempts {
        Some(m) => (
            (0..m).map(|k| f.powi(k as i32)).sum::<f64>(),
            1.0 - f.powi(m as i32),
        ),
        None if f < 1.0 => (1.0 / (1.0 - f), 1.0),
        None => return Vec::new(),
    };
    vec![
        Prediction {
            formula: "sum of f^k for k < attempts",
            metric: Metric::AMPLIFICATION,
            value: amplification,
        },
        Prediction {
            formula: "1 - f^attempts",
            metric: Metric::SUCCESS_RATE,
            value: success,
        },
    ]
}

/// The queueing formulas for a Poisson stream of `lambda` requests/s into `c` workers.
fn queueing(q: &QueueConfig, lambda: f64, c: f64) -> Vec<Prediction> {
    let mut out = Vec::new();
    match (&q.service_time, q.queue_limit) {
        (Dist::Exponential { mean, .. }, None) => {
            let mu = 1.0 / mean.as_secs_f64();
            let a = lambda / mu;
            if a >= c {
                return out;
            }
            out.push(Prediction {
                formula: if c == 1.0 {
                    "M/M/1: 1 / (mu - lambda)"
                } else {
                    "M/M/c: Erlang C wait + 1 / mu"
                },
                metric: Metric::SUCCESS_MEAN,
                value: 1e3 * (erlang_c(c as u32, a) / (c * mu - lambda) + 1.0 / mu),
            });
        }
        (Dist::Exponential { mean, .. }, Some(limit)) if c == 1.0 => {
            let mu = 1.0 / mean.as_secs_f64();
            let rho = lambda / mu;
            let k = f64::from(limit) + 1.0;
            if (rho - 1.0).abs() < 1e-9 {
                return out;
            }
            let blocking = (1.0 - rho) * rho.powf(k) / (1.0 - rho.powf(k + 1.0));
            let in_system =
                rho / (1.0 - rho) - (k + 1.0) * rho.powf(k + 1.0) / (1.0 - rho.powf(k + 1.0));
            out.push(Prediction {
                formula: "M/M/1/K: blocking probability",
                metric: Metric::FAILURE_RATE,
                value: blocking,
            });
            out.push(Prediction {
                formula: "M/M/1/K: L / (lambda (1 - P_K)), by Little's law",
                metric: Metric::SUCCESS_MEAN,
                value: 1e3 * in_system / (lambda * (1.0 - blocking)),
            });
        }
        (Dist::Constant(d), None) if c == 1.0 => {
            let service = d.as_secs_f64();
            let rho = lambda * service;
            if rho >= 1.0 {
                return out;
            }
            out.push(Prediction {
                formula: "M/D/1: Pollaczek-Khinchine",
                metric: Metric::SUCCESS_MEAN,
                value: 1e3 * (service + rho * service / (2.0 * (1.0 - rho))),
            });
        }
        _ => {}
    }
    out
}

/// Erlang's C formula: the probability that an arrival waits, with `c` servers and offered
/// load `a = lambda / mu < c`.
fn erlang_c(c: u32, a: f64) -> f64 {
    // a^k / k! built up term by term, so large c does not overflow.
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 0..c {
        sum += term;
        term *= a / f64::from(k + 1);
    }
    let top = term * f64::from(c) / (f64::from(c) - a);
    top / (sum + top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_c_matches_a_table() {
        // One server: C = rho.
        assert!((erlang_c(1, 0.8) - 0.8).abs() < 1e-12);
        // Four servers at a = 3.2: C = 0.5964 (standard tables).
        assert!((erlang_c(4, 3.2) - 0.5964).abs() < 1e-4);
    }
}
