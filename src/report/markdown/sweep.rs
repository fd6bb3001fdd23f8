//! report.md along a sweep: how each variant's headline numbers move from the first swept
//! value to the last, and with two swept settings a table of every pair of values.

use std::fmt::Write as _;

use super::compare::{SPLIT, differ, est, say};
use super::results::markdown_table;
use super::{capitalized, code, escape};
use crate::metrics::Metric;
use crate::metrics::{ExperimentResult, VariantResult};
use crate::report::shape::spread_split;
use crate::report::value_text;
use crate::scenario::Experiment;

/// Findings along a one-axis sweep of numbers: how each headline metric moves from the first
/// value to the last (only where the two ends really and meaningfully differ), where two
/// variants trade places, and where recovery stops. Truncated points are skipped.
pub fn sweep_findings(experiment: &Experiment, result: &ExperimentResult) -> Vec<String> {
    let mut out = Vec::new();
    let Some(sweep) = experiment.sweep.as_ref() else {
        return out;
    };
    let line = sweep.first_axis_points();
    if line.len() < 2 {
        return out;
    }
    let at_second = match (
        &sweep.second,
        experiment.points[line[0]].second_value.as_ref(),
    ) {
        (Some(second), Some(y)) => format!(
            " (at {} = {})",
            escape(&second.label),
            escape(&value_text(Some(y)))
        ),
        _ => String::new(),
    };
    let axis = Axis {
        path: escape(&sweep.label),
        at_second,
    };
    // Each variant along the line: the value of each point with its results there.
    let along: Vec<Vec<(String, &VariantResult)>> = (0..result.points[0].variants.len())
        .map(|j| {
            line.iter()
                .map(|&k| {
                    let point = &result.points[k];
                    (
                        escape(&value_text(point.value.as_ref())),
                        &point.variants[j],
                    )
                })
                .collect()
        })
        .collect();
    for points in &along {
        let ok: Vec<&(String, &VariantResult)> =
            points.iter().filter(|(_, v)| !v.is_truncated()).collect();
        if ok.len() < 2 {
            continue;
        }
        out.extend(trend(&axis, &ok));
        out.extend(recovery_stops(&axis, &ok));
    }
    for (i, a) in along.iter().enumerate() {
        for b in &along[i + 1..] {
            out.extend(crossings(&axis, a, b));
        }
    }
    out.extend(splits_along(&axis, &along, experiment.replications));
    out
}

/// The swept setting as the findings name it: its label, and with a second axis the value it
/// is held at, " (at label = value)".
struct Axis {
    path: String,
    at_second: String,
}

/// How a variant's headline metrics move from the first of its points that ran to the end
/// to the last, where the two ends really and meaningfully differ.
fn trend(axis: &Axis, ok: &[&(String, &VariantResult)]) -> Option<String> {
    let ((from, first), (to, last)) = (ok.first()?, ok.last()?);
    let mut moves = Vec::new();
    for k in [
        Metric::AMPLIFICATION,
        Metric::SUCCESS_RATE,
        Metric::SUCCESS_P99,
    ] {
        // Success latency where nothing succeeded does not exist, and where most requests
        // failed it is the latency of a few survivors: neither is a trend.
        if k.get(&first.metrics).is_none() || k.get(&last.metrics).is_none() {
            continue;
        }
        if k.unit == crate::metrics::Unit::Millis
            && (first.metrics.failure_rate > 0.5 || last.metrics.failure_rate > 0.5)
        {
            continue;
        }
        let (a, b) = (est(first, &k), est(last, &k));
        if differ(&k, a, b) {
            moves.push(format!(
                "{} {} from {} to {}",
                k.label,
                if b.mean > a.mean { "rises" } else { "falls" },
                say(&k, a.mean),
                say(&k, b.mean)
            ));
        }
    }
    (!moves.is_empty()).then(|| {
        format!(
            "From {} = {from} to {to}{}, **{}**'s {}.",
            axis.path,
            axis.at_second,
            escape(&first.name),
            moves.join(", its ")
        )
    })
}

/// Where recovery stops: the last value at which every replication recovered, and the first
/// after it at which fewer than half did.
fn recovery_stops(axis: &Axis, ok: &[&(String, &VariantResult)]) -> Option<String> {
    let rec = |k: usize| ok[k].1.metrics.recovery.map(|r| r.recovered_fraction);
    if !(0..ok.len()).all(|k| rec(k).is_some()) {
        return None;
    }
    let all = (0..ok.len()).rposition(|k| rec(k) == Some(1.0))?;
    let stops = (0..ok.len()).position(|k| rec(k).is_some_and(|f| f < 0.5))?;
    (all < stops && (0..=all).all(|k| rec(k) == Some(1.0))).then(|| {
        format!(
            "**{}** recovers in every replication up to {} = {}{}; from {} on, fewer than half of its replications recover.",
            escape(&ok[0].1.name),
            axis.path,
            ok[all].0,
            axis.at_second,
            ok[stops].0
        )
    })
}

/// Where variants' replications split into different behaviours with no trigger to count
/// them ([`spread_split`]), in one sentence: their means there are of different runs, which
/// the trends and the figures' lines pass through. Truncated points are skipped.
fn splits_along(
    axis: &Axis,
    along: &[Vec<(String, &VariantResult)>],
    replications: u32,
) -> Option<String> {
    let split: Vec<String> = along
        .iter()
        .filter_map(|points| {
            let at: Vec<&str> = points
                .iter()
                .filter(|(_, v)| !v.is_truncated() && spread_split(v, replications))
                .map(|(x, _)| x.as_str())
                .collect();
            let (_, v) = points.first()?;
            (!at.is_empty()).then(|| format!("**{}** at {}", escape(&v.name), and_list(&at)))
        })
        .collect();
    let split: Vec<&str> = split.iter().map(String::as_str).collect();
    (!split.is_empty()).then(|| {
        format!(
            "The replications split into different behaviours for {} ({}{}): {SPLIT}. The means there, ringed in the sweep figures, describe no single run.",
            and_list(&split),
            axis.path,
            axis.at_second,
        )
    })
}

/// Where two variants trade places in amplification, both sides real: one sentence per
/// crossing, at points where neither variant was truncated.
fn crossings(
    axis: &Axis,
    a: &[(String, &VariantResult)],
    b: &[(String, &VariantResult)],
) -> Vec<String> {
    let k = Metric::AMPLIFICATION;
    let mut out = Vec::new();
    let mut sign = 0i8;
    let mut from: Option<&str> = None;
    // The values since the last real difference where the two were too close to call.
    let mut close: Vec<&str> = Vec::new();
    for ((value, va), (_, vb)) in a.iter().zip(b) {
        if va.is_truncated() || vb.is_truncated() {
            continue;
        }
        let (ea, eb) = (est(va, &k), est(vb, &k));
        if !differ(&k, ea, eb) {
            close.push(value);
            continue;
        }
        let s = if ea.mean < eb.mean { -1 } else { 1 };
        if sign != 0 && s != sign {
            let (lo, hi) = if sign < 0 { (va, vb) } else { (vb, va) };
            // The values between fall under the findings' rule: say so, so that they do not
            // read as a side of the crossing.
            let between = if close.is_empty() {
                String::new()
            } else {
                format!(
                    "; at {} between, they are within {:.0} % of each other or their 95 % intervals overlap, too close to call",
                    and_list(&close),
                    100.0 * super::compare::RELATIVE
                )
            };
            out.push(format!(
                "**{}** amplifies less than **{}** up to {} = {}, and more from {value}{}{between}.",
                escape(&lo.name),
                escape(&hi.name),
                axis.path,
                from.unwrap_or(value),
                axis.at_second
            ));
        }
        sign = s;
        from = Some(value);
        close.clear();
    }
    out
}

/// "30", "30 and 40", "30, 40 and 45".
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// With a two-axis sweep, the phase diagram's numbers as a table per variant, laid out as
/// the figure is: the first setting across, the second up (its last value on top).
pub(super) fn every_pair(out: &mut String, experiment: &Experiment, result: &ExperimentResult) {
    let Some((s, second)) = experiment
        .sweep
        .as_ref()
        .and_then(|s| Some((s, s.second.as_ref()?)))
    else {
        return;
    };
    let m = crate::report::charts::phase_metric(result);
    let _ = writeln!(out, "\n## Every pair of swept values\n");
    // A table wider or longer than a page reads worse than the figure and its CSV.
    if s.values.len() > 12 || second.values.len() > 24 {
        let _ = writeln!(
            out,
            "{} pairs are too many for a table: the phase diagram shows them, and phase-diagram.csv and sweep.csv hold every number.",
            experiment.points.len()
        );
        return;
    }
    let _ = writeln!(
        out,
        "{} (`{}`, in %) for each value of {} (columns) and of {} (rows, its last value on top, as in the phase diagram).",
        capitalized(m.words),
        m.metric.key,
        code(&s.path),
        code(&second.path)
    );
    let header: Vec<String> = s
        .values
        .iter()
        .map(|v| escape(&value_text(Some(v))))
        .collect();
    let corner = format!("{} \\ {}", escape(&second.path), escape(&s.path));
    for (k, v) in result.points[0].variants.iter().enumerate() {
        let _ = writeln!(out, "\n**{}**\n", escape(&v.name));
        let rows = second.values.iter().enumerate().rev().map(|(j, y)| {
            let cells = (0..s.values.len()).map(|i| {
                let at = &result.points[s.point_index(i, j)].variants[k];
                format!("{:.1}", 100.0 * m.metric.value(&at.metrics))
            });
            (escape(&value_text(Some(y))), cells.collect())
        });
        markdown_table(out, &corner, &header, rows);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::variant;
    use super::*;
    use crate::metrics::RecoveryMetrics;

    fn axis() -> Axis {
        Axis {
            path: "rate".to_string(),
            at_second: String::new(),
        }
    }

    /// The variant `name` along three values, "1" to "3", with one number set at each.
    fn along(
        name: &str,
        set: impl Fn(&mut crate::metrics::Metrics, f64),
        xs: [f64; 3],
    ) -> Vec<(String, VariantResult)> {
        (1..=3)
            .zip(xs)
            .map(|(i, x)| (i.to_string(), variant(name, |m| set(m, x))))
            .collect()
    }

    fn refs(points: &[(String, VariantResult)]) -> Vec<(String, &VariantResult)> {
        points.iter().map(|(x, v)| (x.clone(), v)).collect()
    }

    #[test]
    fn a_trend_names_what_moves_from_the_first_value_to_the_last() {
        let points = along("v", |m, x| m.amplification = x, [1.0, 1.5, 2.0]);
        let points = refs(&points);
        let ok: Vec<&(String, &VariantResult)> = points.iter().collect();
        assert_eq!(
            trend(&axis(), &ok).as_deref(),
            Some("From rate = 1 to 3, **v**'s amplification rises from 1.000x to 2.000x.")
        );
        let flat = along("v", |m, x| m.amplification = x, [1.0, 1.5, 1.01]);
        let flat = refs(&flat);
        assert_eq!(trend(&axis(), &flat.iter().collect::<Vec<_>>()), None);
    }

    #[test]
    fn recovery_stops_where_every_replication_recovered_before_and_under_half_after() {
        let recovered = |m: &mut crate::metrics::Metrics, f: f64| {
            m.recovery = Some(RecoveryMetrics {
                recovered_fraction: f,
                ..RecoveryMetrics::default()
            });
        };
        let points = along("v", recovered, [1.0, 1.0, 0.3]);
        let points = refs(&points);
        assert_eq!(
            recovery_stops(&axis(), &points.iter().collect::<Vec<_>>()).as_deref(),
            Some(
                "**v** recovers in every replication up to rate = 2; from 3 on, fewer than half of its replications recover."
            )
        );
        let partly = along("v", recovered, [1.0, 0.6, 0.7]);
        let partly = refs(&partly);
        assert_eq!(
            recovery_stops(&axis(), &partly.iter().collect::<Vec<_>>()),
            None
        );
    }

    #[test]
    fn a_crossing_is_where_two_variants_trade_places_in_amplification() {
        let amp = |m: &mut crate::metrics::Metrics, x: f64| m.amplification = x;
        let a = along("a", amp, [1.0, 1.0, 3.0]);
        let b = along("b", amp, [2.0, 2.0, 2.0]);
        assert_eq!(
            crossings(&axis(), &refs(&a), &refs(&b)),
            ["**a** amplifies less than **b** up to rate = 2, and more from 3."]
        );
        let c = along("c", amp, [4.0, 4.0, 4.0]);
        assert!(crossings(&axis(), &refs(&a), &refs(&c)).is_empty());
    }

    /// tail-at-scale at 1,500 req/s: one replication's median 1.86 s, the others' 2.4 ms, and
    /// the sweep's lines drawn through their mean with no word of it.
    #[test]
    fn points_whose_replications_split_are_named_in_one_sentence() {
        let split = |m: &mut crate::metrics::Metrics, x: f64| m.success_latency_ms.p50 = x;
        let mut a = along("a", split, [2.4, 3.0, 20.0]);
        a[1].1.ci95.success_latency_ms.p50 = 1030.0;
        let b = along("b", split, [2.4, 2.4, 2.4]);
        let sentence = splits_along(&axis(), &[refs(&a), refs(&b)], 5);
        assert_eq!(
            sentence.as_deref(),
            Some(
                "The replications split into different behaviours for **a** at 2 (rate): the spread of their median or mean latency over replications is larger than that latency itself, so some ran into queueing that the others escaped. The means there, ringed in the sweep figures, describe no single run."
            )
        );
        assert_eq!(splits_along(&axis(), &[refs(&b)], 5), None);
    }

    /// aws-backoff-jitter: "decorrelated amplifies less than equal up to 20, and more from
    /// 50" left 30 and 40, under the 5 % rule, unexplained.
    #[test]
    fn a_crossing_says_which_values_between_were_too_close_to_call() {
        let amp = |m: &mut crate::metrics::Metrics, x: f64| m.amplification = x;
        let a = along("a", amp, [1.0, 2.03, 3.0]);
        let b = along("b", amp, [2.0, 2.0, 2.0]);
        assert_eq!(
            crossings(&axis(), &refs(&a), &refs(&b)),
            [
                "**a** amplifies less than **b** up to rate = 1, and more from 3; at 2 between, they are within 5 % of each other or their 95 % intervals overlap, too close to call."
            ]
        );
        assert_eq!(and_list(&["30", "40", "45"]), "30, 40 and 45");
    }
}
