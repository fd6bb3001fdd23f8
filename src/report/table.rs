//! The terminal table: a row per variant (and sweep value) with the headline numbers.

use std::fmt::Write as _;

use crate::metrics::{Metric, Metrics};
use crate::runner::{ExperimentResult, VariantResult};
use crate::scenario::Experiment;

/// One column: its header and its metric (printed with the metric's scale and decimals).
struct Col {
    header: &'static str,
    metric: Metric,
}

/// The headline columns. Latency is the latency of successful requests; the failure share is
/// beside the success share.
const COLS: [Col; 8] = [
    Col {
        header: "requests",
        metric: Metric::REQUESTS,
    },
    Col {
        header: "success %",
        metric: Metric::SUCCESS_RATE,
    },
    Col {
        header: "failed %",
        metric: Metric::FAILURE_RATE,
    },
    Col {
        header: "attempts",
        metric: Metric::ATTEMPTS,
    },
    Col {
        header: "amplification",
        metric: Metric::AMPLIFICATION,
    },
    Col {
        header: "success p50 ms",
        metric: Metric::SUCCESS_P50,
    },
    Col {
        header: "success p99 ms",
        metric: Metric::SUCCESS_P99,
    },
    Col {
        header: "completion s",
        metric: Metric::COMPLETION,
    },
];

/// Columns shown only when some variant has a non-zero value: the retry budget and circuit
/// breaker counts, which are zero for every variant without one.
const POLICY_COLS: [Col; 4] = [
    Col {
        header: "budget denials",
        metric: Metric::BUDGET_DENIALS,
    },
    Col {
        header: "breaker refusals",
        metric: Metric::BREAKER_REFUSALS,
    },
    Col {
        header: "breaker transitions",
        metric: Metric::BREAKER_TRANSITIONS,
    },
    Col {
        header: "open %",
        metric: Metric::BREAKER_OPEN,
    },
];

/// Renders the table of a finished run.
pub fn table(experiment: &Experiment, result: &ExperimentResult) -> String {
    let with_ci = experiment.replications > 1;
    let mut header: Vec<String> = Vec::new();
    let second = experiment.sweep.as_ref().and_then(|s| s.second.as_ref());
    if let Some(s) = &experiment.sweep {
        header.push(s.path.clone());
    }
    if let Some(axis) = second {
        header.push(axis.path.clone());
    }
    header.push("variant".into());
    header.extend(COLS.iter().map(|c| c.header.to_string()));
    let variants = || result.points.iter().flat_map(|p| &p.variants);
    let policy_cols: Vec<&Col> = POLICY_COLS
        .iter()
        .filter(|c| variants().any(|v| c.metric.value(&v.metrics) != 0.0))
        .collect();
    header.extend(policy_cols.iter().map(|c| c.header.to_string()));
    let with_recovery = result
        .points
        .iter()
        .flat_map(|p| &p.variants)
        .any(|v| v.metrics.recovery.is_some());
    if with_recovery {
        header.push("recovery".into());
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (point, at) in result.points.iter().zip(&experiment.points) {
        for v in &point.variants {
            let mut row = Vec::new();
            if point.value.is_some() {
                row.push(super::value_text(point.value.as_ref()));
            }
            if second.is_some() {
                row.push(super::value_text(at.second_value.as_ref()));
            }
            row.push(if v.is_truncated() {
                format!("{} (truncated)", v.name)
            } else {
                v.name.clone()
            });
            row.extend(COLS.iter().map(|c| cell(v, c, with_ci)));
            row.extend(policy_cols.iter().map(|c| cell(v, c, with_ci)));
            if with_recovery {
                row.push(recovery_cell(&v.metrics).unwrap_or_default());
            }
            rows.push(row);
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let text_cols = 1 + usize::from(experiment.sweep.is_some()) + usize::from(second.is_some());
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w - c.chars().count();
            // Text columns, and the recovery column (words), are left-aligned.
            if i < text_cols || (with_recovery && i + 1 == cells.len()) {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = String::new();
    let reps = experiment.replications;
    let _ = writeln!(
        out,
        "{}: seed {}, {} replication{}{}",
        experiment.name,
        experiment.seed,
        reps,
        if reps == 1 { "" } else { "s" },
        if with_ci {
            " (mean ± 95 % half-width)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "{}", line(&header));
    let _ = writeln!(
        out,
        "{}",
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  ")
    );
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    for point in &result.points {
        for v in &point.variants {
            if let Some((rep, why)) = v.truncations.first() {
                let _ = writeln!(
                    out,
                    "warning: {} ({} of {} replications truncated; replication {rep}: {why})",
                    v.name,
                    v.truncations.len(),
                    reps
                );
            }
        }
    }
    out
}

fn cell(v: &VariantResult, c: &Col, with_ci: bool) -> String {
    c.metric.format_estimate(&v.metrics, &v.ci95, with_ci)
}

/// The recovery column: "recovered 25 % (median 6.2 s)" or "metastable (0/200)" (none
/// without triggers).
fn recovery_cell(metrics: &Metrics) -> Option<String> {
    let r = metrics.recovery.as_ref()?;
    let (n, k) = (r.replications, r.recovered);
    if k == 0.0 {
        return Some(format!("metastable (0/{n:.0})"));
    }
    let median = r
        .median_recovery_s
        .map_or(String::new(), |m| format!(" (median {m:.1} s)"));
    // A split result never reads as "100 %" or "0 %".
    let pct = 100.0 * r.recovered_fraction;
    let pct = if k < n && !(0.5..99.5).contains(&pct) {
        format!("{pct:.1}")
    } else {
        format!("{pct:.0}")
    };
    Some(format!("recovered {pct} %{median}"))
}
