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

fn get(v: &Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(0.0)
}

/// Renders the table of a finished run.
pub fn table(experiment: &Experiment, result: &ExperimentResult) -> String {
    let with_ci = experiment.replications > 1;
    let mut header: Vec<String> = Vec::new();
    if let Some(s) = &experiment.sweep {
        header.push(s.path.clone());
    }
    header.push("variant".into());
    header.extend(COLS.iter().map(|c| c.header.to_string()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for point in &result.points {
        for v in &point.variants {
            let mut row = Vec::new();
            if point.value.is_some() {
                row.push(super::value_text(point.value.as_ref()));
            }
            row.push(v.name.clone());
            row.extend(COLS.iter().map(|c| cell(v, c, with_ci)));
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
    let text_cols = if experiment.sweep.is_some() { 2 } else { 1 };
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w - c.chars().count();
            if i < text_cols {
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
