//! The checker every scenario rule reports to: [`Checker`] collects each problem with its JSON
//! path, the rule, the value and the fix, and reads the common kinds of value (durations,
//! probabilities, rates, counts, distributions) with their ranges. It is shared by
//! `validate.rs` and the settings under `policy/`, and depends on neither, so each setting's
//! file and the file-level rules use one vocabulary of checks.

use crate::engine::SimDuration;
use crate::model::{Dist, Scope};

use super::error::{Problem, num, short};
use super::schema::{DurationText, RawDist, RawScope};
use super::units::parse_duration;

/// The largest rate per second: one event per nanosecond, the resolution of simulated time.
pub const MAX_RATE: f64 = 1e9;
/// The largest token count, quota or cost of a budget or rate limit.
pub const MAX_AMOUNT: f64 = 1e9;
/// How far a log-normal draw may reach eight standard deviations up, median * e^(8 sigma):
/// 10^9 s, about 32 years. A draw beyond it comes less than once in 10^15.
pub const MAX_LOGNORMAL_REACH_SECS: f64 = 1e9;

/// A duration as the scenario format writes it, for a default filled into the raw document.
pub(super) fn written(d: SimDuration) -> DurationText {
    DurationText(serde_json::Value::String(d.to_string()))
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
    pub(super) fn failed(&self, path: &str) -> bool {
        self.problems.iter().any(|p| {
            p.path
                .strip_prefix(path)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        })
    }

    /// The duration, or `None` (with a problem) when it cannot be read.
    pub(super) fn duration(&mut self, path: &str, d: &DurationText) -> Option<SimDuration> {
        parse_duration(&d.0).map_err(|e| self.err(path, e)).ok()
    }

    /// The duration, or `None` (with a problem) when it cannot be read or is zero.
    pub(super) fn positive_duration(
        &mut self,
        path: &str,
        d: &DurationText,
    ) -> Option<SimDuration> {
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

    pub(super) fn probability(&mut self, path: &str, p: Option<f64>) -> f64 {
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

    pub(super) fn rate(&mut self, path: &str, r: f64) -> f64 {
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

    pub(super) fn positive_number(&mut self, path: &str, x: f64) {
        if !(x > 0.0 && x <= MAX_AMOUNT) {
            self.err(
                path,
                format!("must be a number > 0 and at most 1e9 (got {})", num(x)),
            );
        }
    }

    pub(super) fn non_negative(&mut self, path: &str, x: f64) {
        if !(0.0..=MAX_AMOUNT).contains(&x) {
            self.err(
                path,
                format!("must be a number >= 0 and at most 1e9 (got {})", num(x)),
            );
        }
    }

    pub(super) fn count_u32(&mut self, path: &str, n: u64, min: u64) -> u32 {
        if n < min {
            self.err(path, format!("must be at least {min} (got {n})"));
            return min as u32;
        }
        u32::try_from(n).unwrap_or_else(|_| {
            self.err(path, format!("must be at most {} (got {n})", u32::MAX));
            min as u32
        })
    }

    pub(super) fn dist(&mut self, path: &str, d: &RawDist) -> Dist {
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

/// Whose policy `policy` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caller {
    /// The clients' `policy`, towards the entry service.
    Clients,
    /// A service's policy on one of its calls (`services.<name>.calls[i].policy`).
    Service,
}

/// The scope of a budget or breaker at `p`. On a call between services there is one per call
/// edge, shared by every attempt on it: "per_client" is an error there, and the scope reads
/// "shared".
pub(super) fn scope(c: &mut Checker, p: &str, raw: &mut Option<RawScope>, caller: Caller) -> Scope {
    let scope = read_scope(c, p, *raw, caller);
    *raw = Some(match scope {
        Scope::PerClient => RawScope::PerClient,
        Scope::Shared => RawScope::Shared,
    });
    scope
}

/// [`scope`], read.
fn read_scope(c: &mut Checker, p: &str, s: Option<RawScope>, caller: Caller) -> Scope {
    match (s, caller) {
        (Some(RawScope::PerClient), Caller::Service) => {
            c.err(
                &format!("{p}.scope"),
                "\"per_client\" does not apply to a call between services: a service's call has one instance per call edge, shared by every attempt on it; remove scope",
            );
            Scope::Shared
        }
        (_, Caller::Service) | (Some(RawScope::Shared), Caller::Clients) => Scope::Shared,
        _ => Scope::PerClient,
    }
}

/// A distribution that is always zero, as the scenario format writes it: the default a
/// setting writes back where the file gives no distribution.
pub(super) fn zero_dist() -> RawDist {
    RawDist::Constant(written(SimDuration::ZERO))
}
