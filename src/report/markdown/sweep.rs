//! report.md along a sweep: how each variant's headline numbers move from the first swept
//! value to the last, and with two swept settings a table of every pair of values.

use std::fmt::Write as _;

use super::compare::{differ, est, say};
use super::{capitalized, code, escape};
use crate::metrics::Metric;
use crate::report::value_text;
use crate::runner::ExperimentResult;
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
    let path = &escape(&sweep.label);
    let value = |k: usize| escape(&value_text(result.points[k].value.as_ref()));
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
    let variants = result.points[0].variants.len();
    for j in 0..variants {
        let name = escape(&result.points[0].variants[j].name);
        let at = |k: usize| &result.points[k].variants[j];
        let ok: Vec<usize> = line
            .iter()
            .copied()
            .filter(|&k| !at(k).is_truncated())
            .collect();
        let (Some(&first), Some(&last)) = (ok.first(), ok.last()) else {
            continue;
        };
        if first == last {
            continue;
        }
        let mut moves = Vec::new();
        for k in [
            Metric::AMPLIFICATION,
            Metric::SUCCESS_RATE,
            Metric::SUCCESS_P99,
        ] {
            // Success latency where nothing succeeded does not exist, and where most requests
            // failed it is the latency of a few survivors: neither is a trend.
            if k.get(&at(first).metrics).is_none() || k.get(&at(last).metrics).is_none() {
                continue;
            }
            if k.unit == crate::metrics::Unit::Millis
                && (at(first).metrics.failure_rate > 0.5 || at(last).metrics.failure_rate > 0.5)
            {
                continue;
            }
            let (a, b) = (est(at(first), &k), est(at(last), &k));
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
        if !moves.is_empty() {
            out.push(format!(
                "From {path} = {} to {}{at_second}, **{name}**'s {}.",
                value(first),
                value(last),
                moves.join(", its ")
            ));
        }
        // Where recovery stops: the last value at which every replication recovered, and the
        // first after it at which fewer than half did.
        let rec = |k: usize| at(k).metrics.recovery.map(|r| r.recovered_fraction);
        if ok.iter().all(|&k| rec(k).is_some()) {
            let all = ok.iter().rposition(|&k| rec(k) == Some(1.0));
            let stops = ok.iter().position(|&k| rec(k).is_some_and(|f| f < 0.5));
            if let (Some(a), Some(b)) = (all, stops)
                && a < b
                && ok[..=a].iter().all(|&k| rec(k) == Some(1.0))
            {
                out.push(format!(
                    "**{name}** recovers in every replication up to {path} = {}{at_second}; from {} on, fewer than half of its replications recover.",
                    value(ok[a]),
                    value(ok[b])
                ));
            }
        }
    }
    // Crossings: where two variants trade places in amplification, both sides real.
    let k = Metric::AMPLIFICATION;
    for a in 0..variants {
        for b in a + 1..variants {
            let mut sign = 0i8;
            let mut from: Option<usize> = None;
            for &p in &line {
                let (va, vb) = (&result.points[p].variants[a], &result.points[p].variants[b]);
                if va.is_truncated() || vb.is_truncated() {
                    continue;
                }
                let (ea, eb) = (est(va, &k), est(vb, &k));
                if !differ(&k, ea, eb) {
                    continue;
                }
                let s = if ea.mean < eb.mean { -1 } else { 1 };
                if sign != 0 && s != sign {
                    let (lo, hi) = if sign < 0 { (a, b) } else { (b, a) };
                    out.push(format!(
                        "**{}** amplifies less than **{}** up to {path} = {}, and more from {}{at_second}.",
                        escape(&result.points[p].variants[lo].name),
                        escape(&result.points[p].variants[hi].name),
                        value(from.unwrap_or(p)),
                        value(p)
                    ));
                }
                sign = s;
                from = Some(p);
            }
        }
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
        .map(|v| escape(&crate::report::value_text(Some(v))))
        .collect();
    for (k, v) in result.points[0].variants.iter().enumerate() {
        let _ = writeln!(out, "\n**{}**\n", escape(&v.name));
        let _ = writeln!(
            out,
            "| {} \\ {} | {} |",
            escape(&second.path),
            escape(&s.path),
            header.join(" | ")
        );
        let _ = writeln!(out, "|---|{}", "---:|".repeat(header.len()));
        for (j, y) in second.values.iter().enumerate().rev() {
            let cells: Vec<String> = (0..s.values.len())
                .map(|i| {
                    let at = &result.points[s.point_index(i, j)].variants[k];
                    format!("{:.1}", 100.0 * m.metric.value(&at.metrics))
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} |",
                escape(&crate::report::value_text(Some(y))),
                cells.join(" | ")
            );
        }
    }
}
