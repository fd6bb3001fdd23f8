//! The folded normal |X|, X ~ Normal(mean, sd), drawn straight to integer nanoseconds by a
//! ziggurat.
//!
//! The standard normal uses Marsaglia and Tsang's 256-layer ziggurat ("The Ziggurat Method for
//! Generating Random Variables", 2000) in the layout `rand_distr` uses: one `u64` gives the
//! layer (its low 8 bits) and a symmetric uniform in [-1, 1) (its top 52 bits); the base layer's
//! tail beyond R is drawn by Marsaglia's 1964 method, and a point in a layer's wedge is accepted
//! by comparing with `exp(-x^2/2)`. The table of abscissae X and ordinates F is computed once,
//! from the recurrence, the first time a folded normal is built ([`TABLE`]).
//!
//! Each [`FoldedNormal`] keeps its own copy of X pre-scaled by the standard deviation in
//! nanoseconds, beside each layer's acceptance ratio X[i+1]/X[i], so that almost every draw
//! (about 99 %) is one `u64`, one table entry, one compare, a multiply-add, `abs` and a
//! rounding to the nearest nanosecond. The random numbers a draw consumes are those
//! `rand_distr::Normal` consumes, so a draw differs from `|Normal::sample|` converted to
//! nanoseconds only by floating-point rounding.

use std::fmt;
use std::sync::LazyLock;

use rand::{Rng, RngExt};
use rand_distr::Open01;
use rand_pcg::Pcg64;

use crate::engine::SimDuration;

/// Number of layers.
pub const LAYERS: usize = 256;

/// The right edge of the base layer's rectangle, where the tail begins: 3.6541528853610088,
/// written with the fewest digits that give the same `f64`.
pub const R: f64 = 3.654_152_885_361_009;

/// The area of every layer under the unnormalised density `exp(-x^2/2)`, as Marsaglia and
/// Tsang publish it (12 significant digits). The table uses the area of the base layer
/// computed from [`R`] at full precision ([`Table::v`]), which agrees with this to those digits.
pub const V_PUBLISHED: f64 = 0.004_928_673_233_99;

/// The unnormalised standard normal density.
#[inline]
fn density(x: f64) -> f64 {
    (-x * x / 2.0).exp()
}

/// The ziggurat of the standard normal: abscissae `x[0..=256]`, decreasing from the base
/// layer's pseudo-width `x[0] = V / f(R)` through `x[1] = R` to `x[256] = 0`, and the density
/// at each, `f[i] = exp(-x[i]^2/2)`. Layer `i` (for `i >= 1`) is the rectangle of width `x[i]`
/// between heights `f[i]` and `f[i+1]`; layer 0 is the rectangle of width R and height f(R)
/// with the tail beyond R.
pub struct Table {
    /// The common area of the layers.
    pub v: f64,
    /// Abscissae.
    pub x: [f64; LAYERS + 1],
    /// Density at each abscissa.
    pub f: [f64; LAYERS + 1],
}

/// The table, built on first use.
pub static TABLE: LazyLock<Table> = LazyLock::new(Table::build);

impl Table {
    /// Builds the table from the recurrence `x[i+1] = sqrt(-2 ln(V / x[i] + f(x[i])))`, with
    /// V the base layer's area: R f(R) plus the tail's area beyond R.
    fn build() -> Table {
        let v = R * density(R) + tail_area(R);
        let mut x = [0.0; LAYERS + 1];
        let mut f = [0.0; LAYERS + 1];
        x[0] = v / density(R);
        x[1] = R;
        for i in 1..LAYERS - 1 {
            x[i + 1] = Self::next_x(v, x[i]);
        }
        // The top: the recurrence's last step lands on 0 up to rounding (`Table::top_residual`).
        x[LAYERS] = 0.0;
        for (fi, xi) in f.iter_mut().zip(&x) {
            *fi = density(*xi);
        }
        Table { v, x, f }
    }

    /// One step of the recurrence, signed: a negative result means the step overshot the top
    /// (its square is negative).
    fn next_x(v: f64, x: f64) -> f64 {
        let s = -2.0 * (v / x + density(x)).ln();
        s.signum() * s.abs().sqrt()
    }

    /// What the recurrence's last step gives for x[256], which the table sets to 0.
    pub fn top_residual(&self) -> f64 {
        Self::next_x(self.v, self.x[LAYERS - 1])
    }
}

/// The area under `exp(-x^2/2)` beyond `r > 0`: `f(r)` times Mills' ratio, by Laplace's
/// continued fraction `1 / (r + 1/(r + 2/(r + 3/(r + ...))))`, evaluated from a depth where it
/// has converged to the last bit for any r near R. (statrs' `erfc` is off by about 1e-10
/// relative here, which the recurrence amplifies about 1500-fold by the top layer.)
fn tail_area(r: f64) -> f64 {
    let mut t = r;
    for k in (1..=200).rev() {
        t = r + f64::from(k) / t;
    }
    density(r) / t
}

/// One layer of a [`FoldedNormal`]: the fast path's acceptance ratio x[i+1]/x[i] and the
/// abscissa x[i] in nanoseconds of this distribution.
#[derive(Clone, Copy)]
struct Layer {
    ratio: f64,
    xs: f64,
}

/// |X| with X ~ Normal(mean, sd), in nanoseconds. Any `sd >= 0` (zero gives the constant
/// |mean|, still consuming one draw's random numbers).
#[derive(Clone)]
pub struct FoldedNormal {
    mean_ns: f64,
    sd_ns: f64,
    layers: Box<[Layer; LAYERS]>,
    table: &'static Table,
}

impl fmt::Debug for FoldedNormal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FoldedNormal")
            .field("mean_ns", &self.mean_ns)
            .field("sd_ns", &self.sd_ns)
            .finish_non_exhaustive()
    }
}

/// The exponent bits that put 52 random mantissa bits in [2, 4).
const EXP_2_TO_4: u64 = 0x4000_0000_0000_0000;

impl FoldedNormal {
    /// The folded normal with the given mean and standard deviation of X.
    pub fn new(mean: SimDuration, sd: SimDuration) -> FoldedNormal {
        FoldedNormal::from_nanos(mean.as_nanos() as f64, sd.as_nanos() as f64)
    }

    /// [`FoldedNormal::new`] with the mean and standard deviation in nanoseconds.
    fn from_nanos(mean_ns: f64, sd_ns: f64) -> FoldedNormal {
        let table: &'static Table = &TABLE;
        let mut layers = Box::new(
            [Layer {
                ratio: 0.0,
                xs: 0.0,
            }; LAYERS],
        );
        for (i, layer) in layers.iter_mut().enumerate() {
            *layer = Layer {
                ratio: table.x[i + 1] / table.x[i],
                xs: table.x[i] * sd_ns,
            };
        }
        FoldedNormal {
            mean_ns,
            sd_ns,
            layers,
            table,
        }
    }

    /// Draws one duration.
    #[inline(always)]
    pub fn sample(&self, rng: &mut Pcg64) -> SimDuration {
        round_nanos(self.unfolded(rng).abs())
    }

    /// Draws X, in nanoseconds, before the fold and the rounding.
    #[inline(always)]
    fn unfolded(&self, rng: &mut Pcg64) -> f64 {
        let (i, u) = layer_and_uniform(rng.next_u64());
        let layer = self.layers[i];
        if u.abs() < layer.ratio {
            self.mean_ns + u * layer.xs
        } else {
            self.slow(rng, i, u)
        }
    }

    /// The draws outside the layers' inner rectangles: the tail, the wedges, and redraws.
    #[cold]
    #[inline(never)]
    fn slow(&self, rng: &mut Pcg64, mut i: usize, mut u: f64) -> f64 {
        let t = self.table;
        loop {
            if i == 0 {
                return self.mean_ns + self.sd_ns * tail(rng, u);
            }
            let x = u * t.x[i];
            if t.f[i + 1] + (t.f[i] - t.f[i + 1]) * rng.random::<f64>() < density(x) {
                return self.mean_ns + u * self.layers[i].xs;
            }
            (i, u) = layer_and_uniform(rng.next_u64());
            let layer = self.layers[i];
            if u.abs() < layer.ratio {
                return self.mean_ns + u * layer.xs;
            }
        }
    }
}

/// The sum of two independent draws of one folded normal, |X1| + |X2| with X1, X2 ~
/// Normal(mean, sd), drawn exactly (up to the 40-bit uniform of the one-word path, whose
/// steps are 2^-39 of a layer's width) and, when the mean is large beside sd, almost always
/// from one random word: a path whose middle instant nothing observes (an `occ` read's answer
/// and the write that follows it) needs only the sum. It is rounded to the nanosecond once,
/// where two draws are rounded each; that matters only for delays of a few nanoseconds.
///
/// For any reals, |a| + |b| = max(|a + b|, |a - b|), and S = X1 + X2 ~ Normal(2 mean,
/// sqrt(2) sd) and D = X1 - X2 ~ Normal(0, sqrt(2) sd) are independent. |D| matters only
/// where it exceeds |S|. Its law is split at t = A sqrt(2) sd, where P(|D| > t) is exactly
/// 27/2^16: bits 8-23 of the word decide that event. When it is false and S >= t, the sum is
/// S, drawn by the ziggurat from the word's other bits (layer: bits 0-7; a uniform in [-1, 1)
/// from bits 24-63). Otherwise [`FoldedPair::slow`] finishes S, draws |D| beyond t, or below t
/// when |S| < t, and takes the larger of |S| and |D|. With hop delays of Normal(10 ms, 2 ms)
/// the one-word path is taken 98.5 % of the time; with a mean small beside the standard
/// deviation |S| < t for almost every sum (the one-word path is taken 0.08 % of the time for
/// (1 ms, 3 ms)) and the slow path, exact but dearer, draws |D| too.
#[derive(Clone, Debug)]
pub struct FoldedPair {
    /// S, unfolded.
    sum: FoldedNormal,
    /// t, in nanoseconds.
    split_ns: f64,
}

/// A standard normal, for |D| below t.
static STANDARD: LazyLock<FoldedNormal> = LazyLock::new(|| FoldedNormal::from_nanos(0.0, 1.0));

/// P(|D| > t) = `PAIR_TAIL` / 2^16.
const PAIR_TAIL: u64 = 27;

/// A with P(|Z| > A) = 27 / 2^16 for a standard normal Z: the inverse normal CDF at
/// 1 - 27/2^17 (Python's `statistics.NormalDist().inv_cdf`, checked in the tests).
const PAIR_A: f64 = 3.532_283_574_138_537;

/// 2^-39: bits 24-63 of a word, centred, times this are uniform on [-1, 1).
const TWO_POW_MINUS_39: f64 = 1.0 / (1u64 << 39) as f64;

impl FoldedPair {
    /// The sum of two draws of |Normal(mean, sd)|.
    pub fn new(mean: SimDuration, sd: SimDuration) -> FoldedPair {
        let sd_ns = sd.as_nanos() as f64 * std::f64::consts::SQRT_2;
        FoldedPair {
            sum: FoldedNormal::from_nanos(2.0 * mean.as_nanos() as f64, sd_ns),
            split_ns: PAIR_A * sd_ns,
        }
    }

    /// Draws one sum.
    #[inline(always)]
    pub fn sample(&self, rng: &mut Pcg64) -> SimDuration {
        let bits = rng.next_u64();
        let i = (bits & 0xff) as usize;
        let tail = (bits >> 8) & 0xffff < PAIR_TAIL;
        let u = ((bits >> 24) as i64 - (1 << 39)) as f64 * TWO_POW_MINUS_39;
        let layer = self.sum.layers[i];
        let s = self.sum.mean_ns + u * layer.xs;
        // One branch for three conditions: the layer takes u, |D| is below t, and S >= t.
        if (u.abs() < layer.ratio) & !tail & (s >= self.split_ns) {
            return round_nanos(s);
        }
        self.slow(rng, i, u, tail)
    }

    /// The draws the one-word path does not finish.
    #[cold]
    #[inline(never)]
    fn slow(&self, rng: &mut Pcg64, i: usize, u: f64, tail: bool) -> SimDuration {
        let layer = self.sum.layers[i];
        let s = if u.abs() < layer.ratio {
            self.sum.mean_ns + u * layer.xs
        } else {
            self.sum.slow(rng, i, u)
        }
        .abs();
        let sd_ns = self.sum.sd_ns;
        let d = if tail {
            // |Z| given |Z| > A, by Marsaglia's method as in `tail`.
            loop {
                let x = -rng.sample::<f64, _>(Open01).ln() / PAIR_A;
                let y = -rng.sample::<f64, _>(Open01).ln();
                if 2.0 * y > x * x {
                    break (PAIR_A + x) * sd_ns;
                }
            }
        } else if s < self.split_ns {
            // |Z| given |Z| <= A, by rejection (it takes one draw 99.96 % of the time).
            loop {
                let z = STANDARD.unfolded(rng).abs();
                if z <= PAIR_A {
                    break z * sd_ns;
                }
            }
        } else {
            0.0
        };
        round_nanos(s.max(d))
    }
}

/// The layer (low 8 bits) and a uniform in [-1, 1) (top 52 bits) from one random word.
#[inline]
fn layer_and_uniform(bits: u64) -> (usize, f64) {
    let i = (bits & 0xff) as usize;
    let u = f64::from_bits((bits >> 12) | EXP_2_TO_4) - 3.0;
    (i, u)
}

/// A standard normal draw beyond R (or below -R when `u < 0`), by Marsaglia's 1964 method:
/// x = -ln(U1)/R, y = -ln(U2) until 2y > x^2; then R + x.
fn tail(rng: &mut Pcg64, u: f64) -> f64 {
    loop {
        let x = -rng.sample::<f64, _>(Open01).ln() / R;
        let y = -rng.sample::<f64, _>(Open01).ln();
        if 2.0 * y > x * x {
            return if u < 0.0 { -(R + x) } else { R + x };
        }
    }
}

/// Rounds non-negative nanoseconds to the nearest whole nanosecond, ties up, saturating at
/// `u64::MAX`, as `SimDuration::from_secs_f64` does.
#[inline]
fn round_nanos(ns: f64) -> SimDuration {
    SimDuration::from_nanos((ns + 0.5) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn table_follows_the_recurrence() {
        let t = &*TABLE;
        assert_eq!(t.x[1], R);
        assert_eq!(t.x[LAYERS], 0.0);
        // The base layer's area computed from R agrees with the published V to its 12 digits.
        assert!(
            ((t.v - V_PUBLISHED) / V_PUBLISHED).abs() < 1e-11,
            "V from R: {}",
            t.v
        );
        // The recurrence lands on 0 at the top. With R as given, exact arithmetic lands at
        // 3.5e-8, and near the top f64 resolves x only to about sqrt(2 * 2^-52) = 1.5e-8,
        // so this is as tight as the check can be.
        let top = t.top_residual();
        assert!(top.abs() < 1e-6, "x[256] from the recurrence: {top}");
        // Every layer has area V: the base layer (rectangle plus tail) by construction of V,
        // the others as width times height.
        let base = R * t.f[1] + simpson(density, R, R + 12.0, 200_000);
        assert!(((base - t.v) / t.v).abs() < 1e-12, "base layer: {base}");
        assert!(
            ((t.x[0] * t.f[1] - t.v) / t.v).abs() < 1e-12,
            "x[0] = V / f(R)"
        );
        for i in 1..LAYERS {
            let area = t.x[i] * (t.f[i + 1] - t.f[i]);
            assert!(
                ((area - t.v) / t.v).abs() < 1e-12,
                "layer {i}: area {area}, V {}",
                t.v
            );
        }
        for i in 0..=LAYERS {
            assert_eq!(t.f[i], (-t.x[i] * t.x[i] / 2.0).exp(), "f[{i}]");
            if i > 0 {
                assert!(t.x[i] < t.x[i - 1], "x decreases at {i}");
            }
        }
    }

    /// Composite Simpson's rule with `n` (even) intervals: an independent check of the tail
    /// area (beyond R + 12 the density is below e^-100).
    fn simpson(g: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
        let h = (b - a) / n as f64;
        let inner: f64 = (1..n)
            .map(|k| g(a + k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 })
            .sum();
        (g(a) + inner + g(b)) * h / 3.0
    }

    /// The standard normal CDF.
    fn phi(z: f64) -> f64 {
        0.5 * statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2)
    }

    /// The folded normal's CDF at `y` nanoseconds.
    fn folded_cdf(mean: f64, sd: f64, y: f64) -> f64 {
        if y <= 0.0 {
            0.0
        } else {
            phi((y - mean) / sd) - phi((-y - mean) / sd)
        }
    }

    /// Kolmogorov-Smirnov distance between sorted integer draws and `cdf`, with a draw of k
    /// nanoseconds standing for the continuous values in [k - 0.5, k + 0.5) it rounds from.
    fn ks_distance(sorted: &[u64], cdf: impl Fn(f64) -> f64) -> f64 {
        let n = sorted.len() as f64;
        let mut d: f64 = 0.0;
        let mut below = 0;
        for group in sorted.chunk_by(|a, b| a == b) {
            let k = group[0] as f64;
            let upto = below + group.len();
            d = d
                .max(upto as f64 / n - cdf(k + 0.5))
                .max(cdf(k - 0.5) - below as f64 / n);
            below = upto;
        }
        d
    }

    /// The law a million draws are checked against ([`check_law`]).
    struct Law<'a> {
        /// What was drawn, for the messages.
        name: String,
        /// The CDF at `y` nanoseconds.
        cdf: &'a dyn Fn(f64) -> f64,
        /// Where the draws' upper tail is taken from, in nanoseconds.
        tail_from: f64,
        /// The mean and the variance, in nanoseconds.
        mean: f64,
        var: f64,
    }

    /// A million draws against `law`: the CDF (KS at the 1 % level), the count beyond
    /// `tail_from` against its exact probability within a binomial 99.9 % bound, the shape of
    /// those draws (KS at 1 %), and the sample mean within its 99.9 % interval.
    fn check_law(mut draws: Vec<u64>, law: Law) {
        let n = draws.len() as f64;
        draws.sort_unstable();
        let cdf = law.cdf;
        let critical = 1.628 / n.sqrt();
        let d = ks_distance(&draws, cdf);
        eprintln!("{}: KS D = {d:.6} (1 % critical {critical:.6})", law.name);
        assert!(d < critical, "{}: KS distance {d} >= {critical}", law.name);

        let p = 1.0 - cdf(law.tail_from + 0.5);
        let tail: Vec<u64> = draws
            .iter()
            .copied()
            .filter(|&k| k as f64 > law.tail_from)
            .collect();
        let expected = n * p;
        let bound = 3.29 * (n * p * (1.0 - p)).sqrt();
        eprintln!(
            "  beyond {:.3} ms: {} draws, expected {expected:.1} +- {bound:.1}",
            law.tail_from / 1e6,
            tail.len()
        );
        assert!(
            (tail.len() as f64 - expected).abs() <= bound,
            "{}: {} draws beyond {}, expected {expected} +- {bound}",
            law.name,
            tail.len(),
            law.tail_from
        );
        let tail_cdf = |y: f64| ((cdf(y) - (1.0 - p)) / p).max(0.0);
        let tail_critical = 1.628 / (tail.len() as f64).sqrt();
        let tail_d = ks_distance(&tail, tail_cdf);
        eprintln!("  tail shape: KS D = {tail_d:.4} (1 % critical {tail_critical:.4})");
        assert!(
            tail_d < tail_critical,
            "{}: tail KS {tail_d} >= {tail_critical}",
            law.name
        );

        let mean_bound = 3.29 * (law.var / n).sqrt();
        let got = draws.iter().map(|&k| k as f64).sum::<f64>() / n;
        eprintln!(
            "  mean {got:.1} ns against {:.1} ns (bound {mean_bound:.1})",
            law.mean
        );
        assert!(
            (got - law.mean).abs() <= mean_bound,
            "{}: mean {got} against {}",
            law.name,
            law.mean
        );
    }

    const N: usize = 1_000_000;

    /// A million draws of |N(mean, sd)| against the folded-normal CDF; the tail is taken
    /// beyond mean + 3.7 sd (past R, so drawn by the tail method alone), and the mean is
    /// `Dist::mean_secs`.
    fn check_fit(mean_ms: u64, sd_ms: u64, seed: u64) {
        let ms = SimDuration::from_millis;
        let dist = crate::model::Dist::normal(ms(mean_ms), ms(sd_ms));
        let (m, s) = (ms(mean_ms).as_nanos() as f64, ms(sd_ms).as_nanos() as f64);
        let mut rng = Pcg64::seed_from_u64(seed);
        let draws = (0..N).map(|_| dist.sample(&mut rng).as_nanos()).collect();
        let mean = dist.mean_secs() * 1e9;
        check_law(
            draws,
            Law {
                name: format!("|N({mean_ms} ms, {sd_ms} ms)|"),
                cdf: &|y| folded_cdf(m, s, y),
                tail_from: m + 3.7 * s,
                mean,
                var: m * m + s * s - mean * mean,
            },
        );
    }

    #[test]
    fn folded_normal_fits_hop_delays() {
        check_fit(10, 2, 11);
    }

    #[test]
    fn folded_normal_fits_where_the_fold_acts() {
        check_fit(1, 3, 12);
    }

    /// A spread of minutes (a wait a user draws from a normal, say): 5 minutes are 3e11 ns,
    /// past `u32::MAX`, so the draws are checked at that scale as well as at hop delays.
    #[test]
    fn folded_normal_fits_a_spread_of_minutes() {
        check_fit(60_000, 300_000, 13);
    }

    /// A million sums from [`FoldedPair`] against the exact CDF of |X1| + |X2|: it is the
    /// larger of |S| and |D|, independent folded normals, so its CDF is their CDFs'
    /// product. The tail is taken beyond t (where the draws of |D| from its tail take over)
    /// or 3 sd of S past its mean, whichever is further; the mean is twice
    /// `Dist::mean_secs`.
    fn check_pair_fit(mean_ms: u64, sd_ms: u64, seed: u64) {
        let ms = SimDuration::from_millis;
        let dist = crate::model::Dist::normal(ms(mean_ms), ms(sd_ms));
        let (m, s) = (ms(mean_ms).as_nanos() as f64, ms(sd_ms).as_nanos() as f64);
        let s2 = s * std::f64::consts::SQRT_2;
        let mut rng = Pcg64::seed_from_u64(seed);
        let draws = (0..N)
            .map(|_| dist.sample_pair(&mut rng).as_nanos())
            .collect();
        let one = dist.mean_secs() * 1e9;
        check_law(
            draws,
            Law {
                name: format!("pair of |N({mean_ms} ms, {sd_ms} ms)|"),
                cdf: &|y| folded_cdf(2.0 * m, s2, y) * folded_cdf(0.0, s2, y),
                tail_from: (PAIR_A * s2).max(2.0 * m + 3.0 * s2),
                mean: 2.0 * one,
                var: 2.0 * (m * m + s * s - one * one),
            },
        );
    }

    #[test]
    fn pair_sums_fit_hop_delays() {
        check_pair_fit(10, 2, 21);
    }

    #[test]
    fn pair_sums_fit_where_the_fold_acts() {
        // With the mean small beside sd, S < t for almost every sum: the slow path draws
        // |D| from its body nearly every time.
        check_pair_fit(1, 3, 22);
        check_pair_fit(0, 5, 23);
    }

    /// Pair sums at a spread of minutes, as `folded_normal_fits_a_spread_of_minutes`.
    #[test]
    fn pair_sums_fit_a_spread_of_minutes() {
        check_pair_fit(60_000, 300_000, 24);
    }

    #[test]
    fn pair_split_has_the_probability_it_claims() {
        // P(|Z| > A) = 27 / 2^16, to the precision of statrs' erfc.
        let p = 2.0 * (1.0 - phi(PAIR_A));
        assert!((p * 65536.0 - 27.0).abs() < 1e-6, "{}", p * 65536.0);
    }

    #[test]
    fn pair_of_zero_sd_is_twice_the_mean() {
        let ms = SimDuration::from_millis;
        let d = FoldedPair::new(ms(3), SimDuration::ZERO);
        let mut rng = Pcg64::seed_from_u64(5);
        assert!((0..100_000).all(|_| d.sample(&mut rng) == ms(6)));
    }

    #[test]
    fn zero_sd_is_the_constant_mean() {
        let ms = SimDuration::from_millis;
        let d = FoldedNormal::new(ms(3), SimDuration::ZERO);
        let mut rng = Pcg64::seed_from_u64(5);
        assert!((0..100_000).all(|_| d.sample(&mut rng) == ms(3)));
    }

    #[test]
    fn draws_follow_rand_distr_up_to_rounding() {
        // The same random numbers as `rand_distr::Normal`: every draw lands within a
        // nanosecond of |Normal::sample| converted, and the streams stay in step.
        use rand_distr::{Distribution, Normal};
        let ms = SimDuration::from_millis;
        for (mean, sd) in [(ms(10), ms(2)), (ms(1), ms(3))] {
            let ours = FoldedNormal::new(mean, sd);
            let theirs = Normal::new(mean.as_secs_f64(), sd.as_secs_f64()).unwrap();
            let (mut a, mut b) = (Pcg64::seed_from_u64(9), Pcg64::seed_from_u64(9));
            for _ in 0..200_000 {
                let x = ours.sample(&mut a).as_nanos();
                let y = SimDuration::from_secs_f64(theirs.sample(&mut b).abs()).as_nanos();
                assert!(x.abs_diff(y) <= 1, "{x} against {y}");
            }
            assert_eq!(a.next_u64(), b.next_u64(), "streams in step");
        }
    }

    #[test]
    fn rounds_to_nearest_and_saturates() {
        assert_eq!(round_nanos(0.0), SimDuration::ZERO);
        assert_eq!(round_nanos(0.49), SimDuration::ZERO);
        assert_eq!(round_nanos(0.5), SimDuration::from_nanos(1));
        assert_eq!(round_nanos(2.5), SimDuration::from_nanos(3));
        assert_eq!(round_nanos(1e30), SimDuration::from_nanos(u64::MAX));
    }
}
