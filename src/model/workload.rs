//! Arrival processes of open workloads: Poisson with a piecewise-linear total rate.
//!
//! The total rate over all clients follows a profile of steps and ramps. Arrival times are drawn
//! exactly by inverting the integrated rate (no thinning), so a variant with the same seed meets
//! the same arrivals. Because a superposition of independent Poisson sources is Poisson with
//! uniformly random labels, the driver draws one merged stream and picks the client uniformly,
//! which is equivalent to N independent sources of rate r/N and far cheaper.

use rand_distr::{Distribution, Exp1};
use rand_pcg::Pcg64;

use crate::engine::{SimDuration, SimTime};

/// One piece of a rate profile: from `start`, the rate is `rate + slope * (t - start)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSegment {
    /// Start of the piece, in seconds.
    pub start: f64,
    /// Rate at `start`, per second.
    pub rate: f64,
    /// Change of rate per second.
    pub slope: f64,
}

/// A point of a profile as written in a scenario: from `at`, the rate is `rate_per_s` (or, with
/// `ramp`, the rate reaches `rate_per_s` at `at` linearly from the previous point).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStep {
    /// When the rate applies or is reached.
    pub at: SimDuration,
    /// Total rate per second.
    pub rate_per_s: f64,
    /// Ramp from the previous point.
    pub ramp: bool,
}

/// The total arrival rate of an open workload over time.
#[derive(Debug, Clone, PartialEq)]
pub struct RateProfile {
    /// The base rate, from t = 0 until the first step.
    pub base_rate: f64,
    /// The steps as written (kept for reports).
    pub steps: Vec<RateStep>,
    segments: Vec<RateSegment>,
}

impl RateProfile {
    /// Builds a profile. `steps` must have strictly increasing times and non-negative rates
    /// (checked by validation).
    pub fn new(base_rate: f64, steps: Vec<RateStep>) -> Self {
        let mut segments = vec![RateSegment {
            start: 0.0,
            rate: base_rate,
            slope: 0.0,
        }];
        for step in &steps {
            let at = step.at.as_secs_f64();
            let last = segments.last_mut().expect("never empty");
            if step.ramp && at > last.start {
                last.slope = (step.rate_per_s - last.rate) / (at - last.start);
            }
            if at == last.start {
                *last = RateSegment {
                    start: at,
                    rate: step.rate_per_s,
                    slope: 0.0,
                };
            } else {
                segments.push(RateSegment {
                    start: at,
                    rate: step.rate_per_s,
                    slope: 0.0,
                });
            }
        }
        RateProfile {
            base_rate,
            steps,
            segments,
        }
    }

    /// The rate at time `t` seconds. Tests read it to check the state; the run never needs it.
    #[cfg(test)]
    pub fn rate_at(&self, t: f64) -> f64 {
        let i = self.segments.partition_point(|s| s.start <= t).max(1) - 1;
        let s = &self.segments[i];
        (s.rate + s.slope * (t - s.start)).max(0.0)
    }

    /// The time of the next arrival after `now`, or `None` if the rate stays zero for ever.
    #[inline]
    pub fn next_arrival(&self, now: SimTime, rng: &mut Pcg64) -> Option<SimTime> {
        let mut budget: f64 = Exp1.sample(rng);
        if let [only] = self.segments.as_slice() {
            // A constant rate, the common case.
            return (only.rate > 0.0).then(|| now + SimDuration::from_secs_f64(budget / only.rate));
        }
        let start = now.as_secs_f64();
        // The offset from `now`, accumulated piece by piece, so that the result does not
        // depend on rounding an absolute time (a stepped profile gives the same arrivals as a
        // constant one while its rate is the same).
        let mut offset = 0.0;
        let mut i = self.segments.partition_point(|s| s.start <= start).max(1) - 1;
        loop {
            let seg = self.segments[i];
            let t = start + offset;
            let rate = (seg.rate + seg.slope * (t - seg.start)).max(0.0);
            let span = self
                .segments
                .get(i + 1)
                .map_or(f64::INFINITY, |s| s.start - t);
            // Integral of the rate over the rest of this piece.
            let mass = if span.is_infinite() {
                if rate > 0.0 || seg.slope > 0.0 {
                    f64::INFINITY
                } else {
                    0.0
                }
            } else {
                rate * span + seg.slope * span * span / 2.0
            };
            if mass >= budget {
                // Solve rate * x + slope * x^2 / 2 = budget in a cancellation-free form.
                let disc = (rate * rate + 2.0 * seg.slope * budget).max(0.0);
                let x = 2.0 * budget / (rate + disc.sqrt());
                return Some(now + SimDuration::from_secs_f64(offset + x));
            }
            if span.is_infinite() {
                return None;
            }
            budget -= mass;
            offset += span;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn count_arrivals(p: &RateProfile, from: f64, to: f64, seed: u64) -> usize {
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut t = SimTime::ZERO;
        let mut n = 0;
        while let Some(next) = p.next_arrival(t, &mut rng) {
            if next.as_secs_f64() >= to {
                break;
            }
            if next.as_secs_f64() >= from {
                n += 1;
            }
            t = next;
        }
        n
    }

    #[test]
    fn constant_rate_counts_are_poisson() {
        let p = RateProfile::new(1000.0, vec![]);
        let n = count_arrivals(&p, 0.0, 100.0, 1) as f64;
        // Mean 100000, sd ~316: 5 sd.
        assert!((n - 100_000.0).abs() < 1600.0, "{n}");
    }

    #[test]
    fn steps_and_ramps_follow_the_profile() {
        let s = SimDuration::from_secs;
        let p = RateProfile::new(
            100.0,
            vec![
                RateStep {
                    at: s(10),
                    rate_per_s: 500.0,
                    ramp: false,
                },
                RateStep {
                    at: s(20),
                    rate_per_s: 100.0,
                    ramp: true,
                },
                RateStep {
                    at: s(30),
                    rate_per_s: 0.0,
                    ramp: false,
                },
            ],
        );
        assert_eq!(p.rate_at(5.0), 100.0);
        assert_eq!(p.rate_at(10.0), 500.0);
        assert!((p.rate_at(15.0) - 300.0).abs() < 1e-9);
        assert_eq!(p.rate_at(35.0), 0.0);
        let spike = count_arrivals(&p, 10.0, 20.0, 2) as f64; // mean 3000
        assert!((spike - 3000.0).abs() < 300.0, "{spike}");
        assert_eq!(count_arrivals(&p, 30.0, 1000.0, 2), 0);
    }

    #[test]
    fn zero_rate_means_no_arrivals() {
        let p = RateProfile::new(0.0, vec![]);
        let mut rng = Pcg64::seed_from_u64(1);
        assert_eq!(p.next_arrival(SimTime::ZERO, &mut rng), None);
    }
}
