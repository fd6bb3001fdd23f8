//! Distributions of durations, as scenario files describe them.
//!
//! A [`Dist`] is built from validated parameters (see `scenario::validate`) and never fails to
//! sample. Draws are made in seconds as `f64` and rounded to whole nanoseconds at once (the
//! folded normal draws nanoseconds directly, see [`FoldedNormal`]), so everything downstream
//! stays integer.

use rand::RngExt;
use rand_distr::{Distribution, Exp, LogNormal};
use rand_pcg::Pcg64;

use super::ziggurat::{FoldedNormal, FoldedPair};
use crate::engine::SimDuration;

/// A distribution of non-negative durations.
#[derive(Debug, Clone)]
pub enum Dist {
    /// Always the same value.
    Constant(SimDuration),
    /// Exponential with the given mean.
    Exponential {
        /// Mean, kept for reports.
        mean: SimDuration,
        /// The sampler, in seconds.
        exp: Exp<f64>,
    },
    /// Uniform on [min, max] nanoseconds.
    Uniform {
        /// Smallest value.
        min: SimDuration,
        /// Largest value.
        max: SimDuration,
    },
    /// |X| with X normal: the folded normal the AWS simulator uses for hop delays.
    Normal {
        /// Mean of X.
        mean: SimDuration,
        /// Standard deviation of X.
        sd: SimDuration,
        /// The sampler, in nanoseconds (a ziggurat).
        normal: FoldedNormal,
        /// The sampler of the sum of two draws ([`Dist::sample_pair`]).
        pair: FoldedPair,
    },
    /// Log-normal with the given median and shape.
    LogNormal {
        /// Median.
        median: SimDuration,
        /// Standard deviation of the logarithm.
        sigma: f64,
        /// The sampler, in seconds.
        lognormal: LogNormal<f64>,
    },
    /// A weighted mixture.
    Mixture {
        /// The components with their normalised weights.
        parts: Vec<(f64, Dist)>,
        /// Running sums of the normalised weights; the last is 1.
        cumulative: Vec<f64>,
    },
}

impl Dist {
    /// The constant zero distribution.
    pub const ZERO: Dist = Dist::Constant(SimDuration::ZERO);

    /// An exponential distribution. `mean` must be positive.
    pub fn exponential(mean: SimDuration) -> Dist {
        let exp = Exp::new(1.0 / mean.as_secs_f64()).expect("validated: mean > 0");
        Dist::Exponential { mean, exp }
    }

    /// A folded normal distribution.
    pub fn normal(mean: SimDuration, sd: SimDuration) -> Dist {
        let normal = FoldedNormal::new(mean, sd);
        let pair = FoldedPair::new(mean, sd);
        Dist::Normal {
            mean,
            sd,
            normal,
            pair,
        }
    }

    /// A log-normal distribution. `median` must be positive, `sigma` finite and non-negative.
    pub fn lognormal(median: SimDuration, sigma: f64) -> Dist {
        let lognormal =
            LogNormal::new(median.as_secs_f64().ln(), sigma).expect("validated: sigma >= 0");
        Dist::LogNormal {
            median,
            sigma,
            lognormal,
        }
    }

    /// A mixture; weights must be positive (they are normalised here).
    pub fn mixture(parts: Vec<(f64, Dist)>) -> Dist {
        let total: f64 = parts.iter().map(|(w, _)| w).sum();
        let parts: Vec<(f64, Dist)> = parts.into_iter().map(|(w, d)| (w / total, d)).collect();
        let mut acc = 0.0;
        let mut cumulative: Vec<f64> = parts
            .iter()
            .map(|(w, _)| {
                acc += w;
                acc
            })
            .collect();
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        Dist::Mixture { parts, cumulative }
    }

    /// Whether some value has a positive probability: a constant (no delay included), a
    /// uniform, normal or log-normal that cannot spread, or a mixture with such a part.
    /// Instants made of such draws can coincide exactly, and then the order of events
    /// scheduled for one instant decides.
    pub fn has_atom(&self) -> bool {
        match self {
            Dist::Constant(_) => true,
            Dist::Exponential { .. } => false,
            Dist::Uniform { min, max } => min == max,
            Dist::Normal { sd, .. } => *sd == SimDuration::ZERO,
            Dist::LogNormal { sigma, .. } => *sigma == 0.0,
            Dist::Mixture { parts, .. } => parts.iter().any(|(_, d)| d.has_atom()),
        }
    }

    /// Draws one duration.
    ///
    /// The kinds drawn in the hot paths (network hops, service times, arrivals) are drawn
    /// in line at the caller; the rest go through one call ([`Dist::sample_other`]). Out of
    /// line, every draw paid a call with its saved registers and the dispatch over all six
    /// kinds, about half of a folded-normal draw's instructions.
    #[inline(always)]
    pub fn sample(&self, rng: &mut Pcg64) -> SimDuration {
        match self {
            Dist::Constant(d) => *d,
            Dist::Exponential { exp, .. } => SimDuration::from_secs_f64(exp.sample(rng)),
            Dist::Normal { normal, .. } => normal.sample(rng),
            _ => self.sample_other(rng),
        }
    }

    /// The sum of two independent draws, for two delays in a row whose middle instant
    /// nothing observes. A folded normal draws the sum exactly ([`FoldedPair`]: from one
    /// random word 98.5 % of the time when the mean is five times sd or more, rounded to the
    /// nanosecond once); every other kind draws twice.
    #[inline(always)]
    pub fn sample_pair(&self, rng: &mut Pcg64) -> SimDuration {
        match self {
            Dist::Normal { pair, .. } => pair.sample(rng),
            _ => {
                let first = self.sample(rng);
                first + self.sample(rng)
            }
        }
    }

    /// [`Dist::sample`] for the kinds it does not draw in line.
    #[inline(never)]
    fn sample_other(&self, rng: &mut Pcg64) -> SimDuration {
        match self {
            Dist::Constant(_) | Dist::Exponential { .. } | Dist::Normal { .. } => self.sample(rng),
            Dist::Uniform { min, max } => {
                SimDuration::from_nanos(rng.random_range(min.as_nanos()..=max.as_nanos()))
            }
            Dist::LogNormal { lognormal, .. } => SimDuration::from_secs_f64(lognormal.sample(rng)),
            Dist::Mixture { parts, cumulative } => {
                let u: f64 = rng.random();
                let i = cumulative.partition_point(|c| *c <= u).min(parts.len() - 1);
                parts[i].1.sample(rng)
            }
        }
    }

    /// The mean, in seconds (exact for every kind; the folded normal's mean accounts for the
    /// fold).
    pub fn mean_secs(&self) -> f64 {
        match self {
            Dist::Constant(d) => d.as_secs_f64(),
            Dist::Exponential { mean, .. } => mean.as_secs_f64(),
            Dist::Uniform { min, max } => (min.as_secs_f64() + max.as_secs_f64()) / 2.0,
            Dist::Normal { mean, sd, .. } => {
                let (m, s) = (mean.as_secs_f64(), sd.as_secs_f64());
                if s == 0.0 {
                    return m.abs();
                }
                let z = m / s;
                s * (2.0 / std::f64::consts::PI).sqrt() * (-z * z / 2.0).exp()
                    + m * (1.0 - 2.0 * normal_cdf(-z))
            }
            Dist::LogNormal { median, sigma, .. } => {
                median.as_secs_f64() * (sigma * sigma / 2.0).exp()
            }
            Dist::Mixture { parts, .. } => parts.iter().map(|(w, d)| w * d.mean_secs()).sum(),
        }
    }

    /// Whether every draw is zero (lets the driver skip work, e.g. a zero-latency network).
    pub fn is_zero(&self) -> bool {
        matches!(self, Dist::Constant(d) if *d == SimDuration::ZERO)
    }
}

/// The standard normal CDF, via the complementary error function.
fn normal_cdf(x: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn sample_mean(d: &Dist, n: usize) -> f64 {
        let mut rng = Pcg64::seed_from_u64(42);
        (0..n)
            .map(|_| d.sample(&mut rng).as_secs_f64())
            .sum::<f64>()
            / n as f64
    }

    #[test]
    fn sample_means_match_mean_secs() {
        let ms = SimDuration::from_millis;
        let cases = [
            Dist::Constant(ms(7)),
            Dist::exponential(ms(10)),
            Dist::Uniform {
                min: ms(2),
                max: ms(4),
            },
            Dist::normal(ms(10), ms(2)),
            Dist::normal(ms(1), ms(3)),
            Dist::lognormal(ms(10), 0.5),
            Dist::mixture(vec![
                (3.0, Dist::Constant(ms(1))),
                (1.0, Dist::Constant(ms(101))),
            ]),
        ];
        for d in &cases {
            let got = sample_mean(d, 200_000);
            let want = d.mean_secs();
            assert!(
                (got - want).abs() / want < 0.01,
                "{d:?}: sample mean {got}, mean {want}"
            );
        }
    }

    #[test]
    fn folded_normal_is_never_negative() {
        let d = Dist::normal(SimDuration::ZERO, SimDuration::from_millis(5));
        let mut rng = Pcg64::seed_from_u64(1);
        assert!((0..10_000).all(|_| d.sample(&mut rng) >= SimDuration::ZERO));
    }
}
