//! Comparing estimates for report.md's findings: when two means really and meaningfully
//! differ, and how a sentence prints a metric's value, a range of values and a group of
//! variant names.

use super::escape;
use crate::metrics::VariantResult;
use crate::metrics::{Metric, Unit};

/// How far apart two estimates must be for a finding: the 95 % intervals must not overlap,
/// and the difference must matter: at least [`RELATIVE`] of the larger value, or for shares
/// (printed in %) at least [`POINTS`] percentage points.
pub const RELATIVE: f64 = 0.05;

/// The smallest difference between two shares that a finding reports, as a fraction (1 point).
pub const POINTS: f64 = 0.01;

/// The rule every finding keeps, in words, stated once above them (with one replication
/// there are no intervals).
pub(super) fn rule(replications: u32) -> String {
    let apart = ["", "the two 95 % intervals are apart and "][usize::from(replications > 1)];
    format!(
        "A difference between variants is a finding where {apart}it is at least {:.0} % of the larger value ({:.0} percentage point for a share); under that, variants are \"about the same\" or go unmentioned.",
        100.0 * RELATIVE,
        100.0 * POINTS
    )
}

/// An estimate: mean and 95 % half-width, in the metric's stored unit.
#[derive(Debug, Clone, Copy)]
pub(super) struct Est {
    pub(super) mean: f64,
    pub(super) half: f64,
}

pub(super) fn est(v: &VariantResult, k: &Metric) -> Est {
    Est {
        mean: k.value(&v.metrics),
        half: k
            .estimate(&v.metrics, &v.ci95)
            .map_or(0.0, |(_, h)| h / k.scale),
    }
}

/// Whether `a` and `b` differ really (intervals apart) and meaningfully (see [`RELATIVE`]).
pub(super) fn differ(k: &Metric, a: Est, b: Est) -> bool {
    differ_in(k.unit, a, b)
}

/// [`differ`] for a metric printed in `unit`.
pub(super) fn differ_in(unit: crate::metrics::Unit, a: Est, b: Est) -> bool {
    let apart = (a.mean - b.mean).abs() > a.half + b.half;
    let gap = (a.mean - b.mean).abs();
    let matters = match unit {
        crate::metrics::Unit::Percent => gap >= POINTS,
        _ => gap >= RELATIVE * a.mean.abs().max(b.mean.abs()),
    };
    apart && matters
}

/// A metric's value as a sentence prints it: scaled, with its decimals and unit.
pub(super) fn say(k: &Metric, x: f64) -> String {
    match k.unit {
        crate::metrics::Unit::Millis => format!("{} ms", significant(x * k.scale)),
        crate::metrics::Unit::Seconds => format!("{} s", significant(x * k.scale)),
        crate::metrics::Unit::Percent => format!("{} %", share(x * k.scale, k.decimals)),
        crate::metrics::Unit::Times => format!("{}x", k.format(x * k.scale)),
        _ => k.format(x * k.scale),
    }
}

/// A share in % with `decimals`, or more where fewer would round it onto 0 or 100 %
/// ([`crate::metrics::share_decimals`]).
pub(super) fn share(pct: f64, decimals: usize) -> String {
    let d = crate::metrics::share_decimals(pct, decimals);
    format!("{pct:.d$}")
}

/// Why [`crate::report::shape::spread_split`] says replications split, as report.md words it.
pub(super) const SPLIT: &str = "the spread of their median or mean latency over replications is larger than that latency itself, so some ran into queueing that the others escaped";

/// The means of `k` over a group of variants as a sentence prints them: one value, or the
/// range "low-high" when they differ in print.
pub(super) fn span(k: &Metric, group: &[&VariantResult]) -> String {
    let values = group.iter().map(|v| k.value(&v.metrics));
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    let (a, b) = (say(k, lo), say(k, hi));
    if a == b {
        a
    } else {
        // "796-812", "93.7-94.0 %", "1.947-1.967x": the unit once, after the range.
        let unit = b.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        format!("{}-{b}", a.trim_end_matches(unit))
    }
}

/// Names in bold, joined: "**a**", "**a** and **b**", "**a**, **b** and **c**".
pub(super) fn names(vs: &[&VariantResult]) -> String {
    let bold: Vec<String> = vs
        .iter()
        .map(|v| format!("**{}**", escape(&v.name)))
        .collect();
    match bold.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The variants a comparison may name: those that ran to the end. A truncated variant's
/// numbers cover only what finished, so it never wins or loses a comparison.
pub(super) fn comparable(variants: &[VariantResult]) -> Vec<&VariantResult> {
    variants.iter().filter(|v| !v.is_truncated()).collect()
}

/// The best and worst of `k` among `vs` (by its better direction), with every variant not
/// really different from the best beside it. `None` without a real, meaningful difference.
pub(super) fn extremes<'a>(
    vs: &[&'a VariantResult],
    k: &Metric,
    better_high: bool,
) -> Option<(Vec<&'a VariantResult>, &'a VariantResult)> {
    extremes_by(vs, k.unit, better_high, |v| Some(est(v, k)))
}

/// [`extremes`] of the estimates `of` gives, for a metric printed in `unit`; a variant it
/// gives none takes no part.
pub(super) fn extremes_by<'a>(
    vs: &[&'a VariantResult],
    unit: Unit,
    better_high: bool,
    of: impl Fn(&VariantResult) -> Option<Est>,
) -> Option<(Vec<&'a VariantResult>, &'a VariantResult)> {
    let at: Vec<(&VariantResult, Est)> = vs.iter().filter_map(|v| Some((*v, of(v)?))).collect();
    let by = |a: &&(&VariantResult, Est), b: &&(&VariantResult, Est)| a.1.mean.total_cmp(&b.1.mean);
    let (low, high) = (*at.iter().min_by(by)?, *at.iter().max_by(by)?);
    let (best, worst) = if better_high {
        (high, low)
    } else {
        (low, high)
    };
    let d = |a: Est, b: Est| differ_in(unit, a, b);
    if !d(best.1, worst.1) {
        return None;
    }
    // Of the variants tied with the worst (and apart from the best), the one a sentence
    // compares with is the earliest in the file: the baseline, the first variant, whenever it
    // is among them, never whichever of equals happened to sort last.
    let tied = at.iter().find(|(_, e)| !d(*e, worst.1) && d(*e, best.1));
    let group = at.iter().filter(|(_, e)| !d(*e, best.1)).map(|(v, _)| *v);
    Some((group.collect(), tied.map_or(worst.0, |w| w.0)))
}

/// A number with about three significant figures (never fewer than the integer digits).
fn significant(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Whose attempts wasted work is spent on: with hedging, the losers of a race as well as
/// the attempts whose client gave up.
pub(super) fn unawaited(m: &crate::metrics::Metrics) -> &'static str {
    if m.hedges > 0.0 {
        "nobody waited for any more (a client had given up, or a hedge had already answered)"
    } else {
        "whose client had already given up"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::variant;
    use super::*;
    use crate::metrics::t_quantile_975;
    use crate::report::shape::spread_split;

    #[test]
    fn the_rule_is_stated_with_its_thresholds() {
        assert_eq!(
            rule(5),
            "A difference between variants is a finding where the two 95 % intervals are apart and it is at least 5 % of the larger value (1 percentage point for a share); under that, variants are \"about the same\" or go unmentioned."
        );
        assert!(rule(1).contains("a finding where it is at least 5 % of the larger value"));
    }

    /// double-charge: 0.9 timeouts in 12,000 requests read "100.0 %" success and "fails 0.0 %".
    #[test]
    fn a_share_near_a_bound_is_never_printed_as_the_bound() {
        assert_eq!(say(&Metric::SUCCESS_RATE, 0.999925), "99.99 %");
        assert_eq!(say(&Metric::FAILURE_RATE, 0.000075), "0.01 %");
        assert_eq!(say(&Metric::FAILURE_RATE, 0.00004), "0.004 %");
        assert_eq!(say(&Metric::SUCCESS_RATE, 1.0), "100.0 %");
        assert_eq!(say(&Metric::FAILURE_RATE, 0.0), "0.0 %");
        assert_eq!(share(99.7, 0), "99.7");
    }

    /// tail-at-scale at 1,500 req/s: per-replication medians of 2.4 ms and, in one, 1.86 s.
    #[test]
    fn replications_whose_latency_spreads_wider_than_itself_split() {
        let medians = [2.9, 2.4, 1858.1, 2.4, 3.0];
        let mean = medians.iter().sum::<f64>() / 5.0;
        let sd = (medians.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
        let mut v = variant("hedge", |m| m.success_latency_ms.p50 = 3.0);
        v.ci95.success_latency_ms.p50 = t_quantile_975(4) * sd / 5f64.sqrt();
        assert!(spread_split(&v, 5));
        assert!(!spread_split(&v, 1), "one replication");
        // One behaviour: medians within a tenth of each other.
        v.ci95.success_latency_ms.p50 = 0.1;
        assert!(!spread_split(&v, 5));
    }
}
