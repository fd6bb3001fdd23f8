//! The terminal table: a row per variant (and sweep value) with the headline numbers.

use std::fmt::Write as _;

use serde_json::Value;

use crate::runner::{ExperimentResult, VariantResult};
use crate::scenario::Experiment;

/// One column: header, JSON path into the metrics, scale, decimals.
struct Col {
    header: &'static str,
    path: &'static [&'static str],
    scale: f64,
    decimals: usize,
}

const COLS: [Col; 7] = [
    Col {
        header: "requests",
        path: &["requests"],
        scale: 1.0,
        decimals: 0,
    },
    Col {
        header: "success %",
        path: &["success_rate"],
        scale: 100.0,
        decimals: 2,
    },
    Col {
        header: "attempts",
        path: &["attempts"],
        scale: 1.0,
        decimals: 0,
    },
    Col {
        header: "amplification",
        path: &["amplification"],
        scale: 1.0,
        decimals: 3,
    },
    Col {
        header: "p50 ms",
        path: &["latency_ms", "p50"],
        scale: 1.0,
        decimals: 1,
    },
    Col {
        header: "p99 ms",
        path: &["latency_ms", "p99"],
        scale: 1.0,
        decimals: 1,
    },
    Col {
        header: "makespan s",
        path: &["makespan_ms"],
        scale: 1e-3,
        decimals: 2,
    },
];

/// Columns shown only when some variant has a non-zero value: the retry budget and circuit
/// breaker counts, which are zero for every variant without one.
const POLICY_COLS: [Col; 4] = [
    Col {
        header: "budget denials",
        path: &["budget_denials"],
        scale: 1.0,
        decimals: 0,
    },
    Col {
        header: "breaker refusals",
        path: &["breaker", "refusals"],
        scale: 1.0,
        decimals: 0,
    },
    Col {
        header: "breaker transitions",
        path: &["breaker", "transitions"],
        scale: 1.0,
        decimals: 0,
    },
    Col {
        header: "open %",
        path: &["breaker", "open_fraction"],
        scale: 100.0,
        decimals: 1,
    },
];

fn get(v: &Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(0.0)
}

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
        .filter(|c| variants().any(|v| get(&v.metrics, c.path) != 0.0))
        .collect();
    header.extend(policy_cols.iter().map(|c| c.header.to_string()));
    let with_recovery = result
        .points
        .iter()
        .flat_map(|p| &p.variants)
        .any(|v| v.metrics.get("recovery").is_some());
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
            row.push(v.name.clone());
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
    let mean = get(&v.metrics, c.path) * c.scale;
    let d = c.decimals;
    if with_ci {
        let half = get(&v.ci95, c.path) * c.scale;
        format!("{mean:.d$} ± {half:.d$}")
    } else {
        format!("{mean:.d$}")
    }
}

/// The recovery column: "recovered 25 % (median 6.2 s)" or "metastable (0/200)", from the
/// `recovery` object of a variant's metrics (none without triggers).
fn recovery_cell(metrics: &Value) -> Option<String> {
    let r = metrics.get("recovery")?;
    let n = r.get("replications")?.as_u64()?;
    let k = r.get("recovered")?.as_u64()?;
    if k == 0 {
        return Some(format!("metastable (0/{n})"));
    }
    let fraction = r.get("recovered_fraction")?.as_f64()?;
    let median = r
        .get("median_recovery_s")
        .and_then(Value::as_f64)
        .map_or(String::new(), |m| format!(" (median {m:.1} s)"));
    // A split result never reads as "100 %" or "0 %".
    let pct = 100.0 * fraction;
    let pct = if k < n && !(0.5..99.5).contains(&pct) {
        format!("{pct:.1}")
    } else {
        format!("{pct:.0}")
    };
    Some(format!("recovered {pct} %{median}"))
}
