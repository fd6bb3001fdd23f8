//! Backoff schedules: how long a client waits before its k-th retry.
//!
//! `raw(k) = min(cap, base * multiplier^(k-1))` for the k-th retry (k = 1 is the first retry),
//! then jitter: none, full (`U[0, raw]`), equal (`raw/2 + U[0, raw/2]`) or decorrelated
//! (`s_k = min(cap, U[base, 3 s_(k-1)])`, `s_0 = base`, kept per logical request).
//!
//! Envoy's router backoff ([`Backoff::Envoy`], `JitteredExponentialBackOffStrategy` in
//! Envoy's `source/common/common/backoff_strategy.cc`) counts in whole milliseconds: the
//! k-th retry waits `random % interval_k` ms, a whole number of milliseconds drawn uniformly
//! from 0 to `interval_k - 1`, where `interval_1 = base_interval` and the next interval is
//! twice the last while the last is below `max_interval / 2` (integer division), else
//! `max_interval`.

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::engine::SimDuration;

/// How a backoff delay is randomised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// The raw delay.
    None,
    /// Uniform on [0, raw].
    Full,
    /// raw/2 plus uniform on [0, raw/2].
    Equal,
    /// Uniform on [base, 3 * previous], capped.
    Decorrelated,
}

impl Jitter {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
        }
    }
}

/// A validated backoff policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Backoff {
    /// Retry at once.
    None,
    /// Exponential backoff with jitter; made by [`Backoff::exponential`]. Its fields are
    /// read, never changed in place: `raws` is a function of `base`, `multiplier` and `cap`,
    /// so a different schedule is a new value from [`Backoff::exponential`].
    Exponential {
        /// Delay before the first retry, before jitter.
        base: SimDuration,
        /// Growth per retry (>= 1).
        multiplier: f64,
        /// Largest raw delay (>= base).
        cap: SimDuration,
        /// Randomisation.
        jitter: Jitter,
        /// The raw delays of the first retries, worked out once.
        raws: RawDelays,
    },
    /// Envoy's fully jittered exponential backoff; made by [`Backoff::envoy`].
    Envoy {
        /// The first retry's interval, in whole milliseconds (> 0).
        base_interval: SimDuration,
        /// The largest interval, in whole milliseconds (>= base_interval).
        max_interval: SimDuration,
        /// The intervals in milliseconds, the k-th retry's at k - 1, up to the first that is
        /// `max_interval` (every later retry's).
        intervals: Box<[u64]>,
    },
}

/// Retries whose raw delay [`RawDelays`] keeps.
const KEPT_RAWS: usize = 64;

/// The raw delays before retries 1 to [`KEPT_RAWS`], in nanoseconds, each computed as
/// [`Backoff::raw`] computes the later ones, so a retry's delay is a lookup rather than a
/// power and a rounding (the same values: a function of the policy's other fields).
#[derive(Clone, PartialEq)]
pub struct RawDelays(Box<[u64; KEPT_RAWS]>);

impl std::fmt::Debug for RawDelays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawDelays(1: {} ns, ..)", self.0[0])
    }
}

/// `min(cap, base * multiplier^(k-1))` for retry `k`, rounded to the nanosecond.
fn raw_delay(base: SimDuration, multiplier: f64, cap: SimDuration, k: u32) -> u64 {
    let exponent = k.saturating_sub(1).min(i32::MAX as u32) as i32;
    let raw = base.as_nanos() as f64 * multiplier.powi(exponent);
    if raw >= cap.as_nanos() as f64 {
        cap.as_nanos()
    } else {
        raw.round() as u64
    }
}

impl Backoff {
    /// Exponential backoff from `base`, times `multiplier` per retry, capped at `cap`, with
    /// `jitter`.
    pub fn exponential(
        base: SimDuration,
        multiplier: f64,
        cap: SimDuration,
        jitter: Jitter,
    ) -> Self {
        let raws = std::array::from_fn(|i| raw_delay(base, multiplier, cap, i as u32 + 1));
        Backoff::Exponential {
            base,
            multiplier,
            cap,
            jitter,
            raws: RawDelays(Box::new(raws)),
        }
    }

    /// Envoy's backoff from `base_interval` up to `max_interval`, both whole milliseconds
    /// with `0 < base_interval <= max_interval`. The intervals follow
    /// `JitteredExponentialBackOffStrategy::nextBackOffMs`: the next is twice the last while
    /// the last is below `max_interval / 2` (rounded down), else `max_interval`.
    pub fn envoy(base_interval: SimDuration, max_interval: SimDuration) -> Self {
        let (base, max) = (
            base_interval.as_nanos() / 1_000_000,
            max_interval.as_nanos() / 1_000_000,
        );
        let doubling_limit = max / 2;
        let mut intervals = vec![base];
        let mut next = base;
        while next != max {
            next = if next < doubling_limit { next * 2 } else { max };
            intervals.push(next);
        }
        Backoff::Envoy {
            base_interval,
            max_interval,
            intervals: intervals.into_boxed_slice(),
        }
    }

    /// The un-jittered delay before retry `k` (k >= 1): `min(cap, base * multiplier^(k-1))`;
    /// for Envoy's backoff, the interval its delay is drawn below.
    #[inline]
    pub fn raw(&self, k: u32) -> SimDuration {
        match self {
            Backoff::None => SimDuration::ZERO,
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                raws,
                ..
            } => SimDuration::from_nanos(match raws.0.get(k.max(1) as usize - 1) {
                Some(&raw) => raw,
                None => raw_delay(*base, *multiplier, *cap, k),
            }),
            Backoff::Envoy { intervals, .. } => {
                SimDuration::from_millis(envoy_interval(intervals, k))
            }
        }
    }

    /// The delay before retry `k` (k >= 1). `previous` is the logical request's last
    /// decorrelated sleep ([`SimDuration::ZERO`] before its first retry, meaning `base`); it is
    /// updated in place. Draws only from `rng`, and only when the jitter needs it.
    #[inline(always)]
    pub fn delay(&self, k: u32, previous: &mut SimDuration, rng: &mut Pcg64) -> SimDuration {
        match *self {
            Backoff::None => SimDuration::ZERO,
            Backoff::Exponential {
                base, cap, jitter, ..
            } => match jitter {
                Jitter::None => self.raw(k),
                Jitter::Full => {
                    SimDuration::from_nanos(rng.random_range(0..=self.raw(k).as_nanos()))
                }
                Jitter::Equal => {
                    let raw = self.raw(k).as_nanos();
                    let half = raw / 2;
                    SimDuration::from_nanos(half + rng.random_range(0..=raw - half))
                }
                Jitter::Decorrelated => {
                    let prev = if *previous == SimDuration::ZERO {
                        base
                    } else {
                        *previous
                    };
                    let hi = prev.as_nanos().saturating_mul(3).max(base.as_nanos());
                    let s = rng.random_range(base.as_nanos()..=hi).min(cap.as_nanos());
                    *previous = SimDuration::from_nanos(s);
                    *previous
                }
            },
            Backoff::Envoy { ref intervals, .. } => {
                SimDuration::from_millis(rng.random_range(0..envoy_interval(intervals, k)))
            }
        }
    }
}

/// The interval of Envoy's `k`-th retry (k >= 1; 0 is taken as 1), in milliseconds.
#[inline]
fn envoy_interval(intervals: &[u64], k: u32) -> u64 {
    let last = intervals.len() - 1;
    intervals[(k.max(1) as usize - 1).min(last)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn exp(jitter: Jitter) -> Backoff {
        Backoff::exponential(
            SimDuration::from_millis(10),
            2.0,
            SimDuration::from_millis(100),
            jitter,
        )
    }

    #[test]
    fn retry_chapter_schedule_10_20_40_80_100_100() {
        let b = exp(Jitter::None);
        let mut prev = SimDuration::ZERO;
        let mut rng = Pcg64::seed_from_u64(0);
        let got: Vec<u64> = (1..=6)
            .map(|k| b.delay(k, &mut prev, &mut rng).as_nanos() / 1_000_000)
            .collect();
        assert_eq!(got, vec![10, 20, 40, 80, 100, 100]);
    }

    #[test]
    fn jitter_stays_in_its_interval() {
        let mut rng = Pcg64::seed_from_u64(3);
        for k in 1..=8 {
            let raw = exp(Jitter::None).raw(k).as_nanos();
            for _ in 0..1000 {
                let mut prev = SimDuration::ZERO;
                let full = exp(Jitter::Full).delay(k, &mut prev, &mut rng).as_nanos();
                assert!(full <= raw);
                let equal = exp(Jitter::Equal).delay(k, &mut prev, &mut rng).as_nanos();
                assert!(equal >= raw / 2 && equal <= raw);
            }
        }
    }

    #[test]
    fn decorrelated_grows_from_base_and_respects_cap() {
        let b = exp(Jitter::Decorrelated);
        let mut rng = Pcg64::seed_from_u64(9);
        let mut prev = SimDuration::ZERO;
        let first = b.delay(1, &mut prev, &mut rng);
        assert!(first >= SimDuration::from_millis(10) && first <= SimDuration::from_millis(30));
        let mut last = first;
        for k in 2..50 {
            let before = last;
            last = b.delay(k, &mut prev, &mut rng);
            assert!(last >= SimDuration::from_millis(10));
            assert!(last <= SimDuration::from_millis(100));
            assert!(last.as_nanos() <= before.as_nanos() * 3);
        }
    }

    /// The kept raw delays are the ones the formula gives, for retries inside the table and
    /// past it, for growth that reaches the cap early, late (a multiplier just above one) or
    /// never (a cap of the end of time), and for retry 0 (treated as the first): both as
    /// `raw_delay` computes each retry on its own (the table's indexing) and as the formula
    /// stood before the table, copied here (the values).
    #[test]
    fn kept_raw_delays_equal_the_formula() {
        let shapes = [
            (
                SimDuration::from_millis(10),
                2.0,
                SimDuration::from_millis(100),
            ),
            (
                SimDuration::from_millis(7),
                1.000_000_1,
                SimDuration::from_secs(1),
            ),
            (SimDuration::from_nanos(3), 1.5, SimDuration(u64::MAX)),
            (
                SimDuration::from_millis(5),
                1.0,
                SimDuration::from_millis(5),
            ),
            (SimDuration::from_secs(1), 3.7, SimDuration::from_secs(3600)),
        ];
        // `Backoff::raw` before the table.
        let before = |base: SimDuration, multiplier: f64, cap: SimDuration, k: u32| {
            let exponent = k.saturating_sub(1).min(i32::MAX as u32) as i32;
            let raw = base.as_nanos() as f64 * multiplier.powi(exponent);
            if raw >= cap.as_nanos() as f64 {
                cap
            } else {
                SimDuration::from_nanos(raw.round() as u64)
            }
        };
        for (base, multiplier, cap) in shapes {
            let b = Backoff::exponential(base, multiplier, cap, Jitter::None);
            for k in (0..=200).chain([1_000, u32::MAX]) {
                let why = format!("retry {k} of {base} x{multiplier} capped at {cap}");
                assert_eq!(
                    b.raw(k).as_nanos(),
                    raw_delay(base, multiplier, cap, k.max(1)),
                    "{why}"
                );
                assert_eq!(b.raw(k), before(base, multiplier, cap, k), "{why}");
            }
        }
    }

    /// Envoy's defaults, base 25 ms and max 10 x base: intervals 25, 50, 100, 200, then 250
    /// (200 is not below 250 / 2 = 125); an odd max of 251 ms stops doubling at 125 = 251 / 2
    /// and jumps to 251; a base equal to the max stays there.
    #[test]
    fn envoy_intervals_double_below_half_the_max_then_stay_at_it() {
        let ms = SimDuration::from_millis;
        let intervals = |b: Backoff| {
            (1..=7)
                .map(|k| b.raw(k).as_nanos() / 1_000_000)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            intervals(Backoff::envoy(ms(25), ms(250))),
            [25, 50, 100, 200, 250, 250, 250]
        );
        assert_eq!(
            intervals(Backoff::envoy(ms(125), ms(251))),
            [125, 251, 251, 251, 251, 251, 251]
        );
        assert_eq!(
            intervals(Backoff::envoy(ms(31), ms(251))),
            [31, 62, 124, 248, 251, 251, 251]
        );
        assert_eq!(intervals(Backoff::envoy(ms(40), ms(40))), [40; 7]);
        assert_eq!(
            Backoff::envoy(ms(1), ms(u64::MAX / 2_000_000))
                .raw(u32::MAX)
                .as_nanos()
                / 1_000_000,
            u64::MAX / 2_000_000
        );
    }

    /// The k-th delay is a whole number of milliseconds, uniform on 0 .. interval_k - 1: its
    /// mean is (interval_k - 1) / 2 ms and its variance (interval_k^2 - 1) / 12 ms^2. With
    /// 200,000 draws per retry the sample mean is within 4 standard errors.
    #[test]
    fn envoy_delays_are_uniform_whole_milliseconds_below_the_interval() {
        let b = Backoff::envoy(SimDuration::from_millis(25), SimDuration::from_millis(250));
        let mut rng = Pcg64::seed_from_u64(11);
        let n = 200_000;
        for (k, interval) in [
            (1u32, 25u64),
            (2, 50),
            (3, 100),
            (4, 200),
            (5, 250),
            (9, 250),
        ] {
            let mut prev = SimDuration::ZERO;
            let (mut sum, mut seen_top, mut seen_zero) = (0u64, false, false);
            for _ in 0..n {
                let d = b.delay(k, &mut prev, &mut rng).as_nanos();
                assert_eq!(d % 1_000_000, 0, "whole milliseconds");
                let ms = d / 1_000_000;
                assert!(ms < interval, "retry {k}: {ms} ms");
                seen_top |= ms == interval - 1;
                seen_zero |= ms == 0;
                sum += ms;
            }
            assert!(
                seen_top && seen_zero,
                "retry {k} covers 0 to {}",
                interval - 1
            );
            let mean = sum as f64 / f64::from(n);
            let expected = (interval - 1) as f64 / 2.0;
            let se = (((interval * interval - 1) as f64 / 12.0) / f64::from(n)).sqrt();
            assert!(
                (mean - expected).abs() < 4.0 * se,
                "retry {k}: mean {mean}, expected {expected}"
            );
        }
    }

    #[test]
    fn huge_retry_numbers_saturate_at_cap() {
        assert_eq!(exp(Jitter::None).raw(10_000), SimDuration::from_millis(100));
    }
}
