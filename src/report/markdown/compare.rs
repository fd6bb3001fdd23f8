//! Comparing estimates for report.md's findings: when two means really and meaningfully
//! differ, and how a sentence prints a metric's value, a range of values and a group of
//! variant names.

use super::escape;
use crate::metrics::Metric;
use crate::metrics::VariantResult;

/// How far apart two estimates must be for a finding: the 95 % intervals must not overlap,
/// and the difference must matter: at least [`RELATIVE`] of the larger value, or for shares
/// (printed in %) at least [`POINTS`] percentage points.
pub const RELATIVE: f64 = 0.05;

/// The smallest difference between two shares that a finding reports, as a fraction (1 point).
pub const POINTS: f64 = 0.01;

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
        crate::metrics::Unit::Percent => format!("{} %", k.format(x * k.scale)),
        crate::metrics::Unit::Times => format!("{}x", k.format(x * k.scale)),
        _ => k.format(x * k.scale),
    }
}

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
    let by = |a: &&&VariantResult, b: &&&VariantResult| {
        k.value(&a.metrics).total_cmp(&k.value(&b.metrics))
    };
    let (low, high) = (vs.iter().min_by(by)?, vs.iter().max_by(by)?);
    let (best, worst) = if better_high {
        (high, low)
    } else {
        (low, high)
    };
    if !differ(k, est(best, k), est(worst, k)) {
        return None;
    }
    // Of the variants tied with the worst (and apart from the best), the one a sentence
    // compares with is the earliest in the file: the baseline, the first variant, whenever it
    // is among them, never whichever of equals happened to sort last.
    let worst = vs
        .iter()
        .find(|v| !differ(k, est(v, k), est(worst, k)) && differ(k, est(v, k), est(best, k)))
        .unwrap_or(worst);
    let group: Vec<&VariantResult> = vs
        .iter()
        .filter(|v| !differ(k, est(v, k), est(best, k)))
        .copied()
        .collect();
    Some((group, worst))
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
