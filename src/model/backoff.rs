//! Backoff schedules: how long a client waits before its k-th retry.
//!
//! `raw(k) = min(cap, base * multiplier^(k-1))` for the k-th retry (k = 1 is the first retry),
//! then jitter: none, full (`U[0, raw]`), equal (`raw/2 + U[0, raw/2]`) or decorrelated
//! (`s_k = min(cap, U[base, 3 s_(k-1)])`, `s_0 = base`, kept per logical request).

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

    /// The un-jittered delay before retry `k` (k >= 1): `min(cap, base * multiplier^(k-1))`.
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
        }
    }
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

    #[test]
    fn huge_retry_numbers_saturate_at_cap() {
        assert_eq!(exp(Jitter::None).raw(10_000), SimDuration::from_millis(100));
    }
}
