//! report.md along a sweep: how each variant's headline numbers move from the first swept
//! value to the last, and with two swept settings a table of every pair of values.

use std::fmt::Write as _;

use super::compare::{differ, est, say};
use super::results::markdown_table;
use super::{capitalized, code, escape};
use crate::metrics::Metric;
use crate::report::value_text;
use crate::runner::{ExperimentResult, VariantResult};
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
    for ((value, va), (_, vb)) in a.iter().zip(b) {
        if va.is_truncated() || vb.is_truncated() {
            continue;
        }
        let (ea, eb) = (est(va, &k), est(vb, &k));
        if !differ(&k, ea, eb) {
            continue;
        }
        let s = if ea.mean < eb.mean { -1 } else { 1 };
        if sign != 0 && s != sign {
            let (lo, hi) = if sign < 0 { (va, vb) } else { (vb, va) };
            out.push(format!(
                "**{}** amplifies less than **{}** up to {} = {}, and more from {value}{}.",
                escape(&lo.name),
                escape(&hi.name),
                axis.path,
                from.unwrap_or(value),
                axis.at_second
            ));
        }
        sign = s;
        from = Some(value);
    }
    out
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
