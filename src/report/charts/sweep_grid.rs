//! Every headline metric against the swept value, one small panel each, with one legend. With
//! a two-axis sweep, against the first axis at the second axis' focus value.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep_curves;
use crate::report::metric;
use crate::runner::ExperimentResult;
use crate::scenario::Experiment;

/// The panels: (dotted path, title with unit, scale to that unit).
const PANELS: [(&str, &str, f64); 12] = [
    ("requests", "requests", 1.0),
    ("success_rate", "success rate (%)", 100.0),
    ("attempts", "work (attempts)", 1.0),
    ("retries", "retries", 1.0),
    ("amplification", "amplification (x)", 1.0),
    ("latency_ms.p50", "p50 latency (ms)", 1.0),
    ("latency_ms.p99", "p99 latency (ms)", 1.0),
    ("makespan_ms", "completion time (s)", 1e-3),
    ("server.served", "served", 1.0),
    ("server.wasted", "wasted (served too late)", 1.0),
    ("server.rejected", "rejected", 1.0),
    ("server.utilization", "utilization (%)", 100.0),
];

/// Draws the grid and returns its CSV (long format: value, variant, metric, mean, ci95).
pub fn draw<DB: DrawingBackend>(
    experiment: &Experiment,
    result: &ExperimentResult,
    root: &DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let sweep = experiment
        .sweep
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("a sweep grid needs a sweep"))?;
    let mut w = csv::Writer::from_writer(Vec::new());
    // With two axes, the second axis' value follows the first's in every row.
    let second = sweep.second.as_ref();
    let mut header = vec![sweep.path.as_str()];
    header.extend(second.map(|s| s.path.as_str()));
    header.extend(["variant", "metric", "mean", "ci95"]);
    w.write_record(&header)?;
    for k in sweep.first_axis_points() {
        let point = &result.points[k];
        let mut values = vec![crate::report::value_text(point.value.as_ref())];
        if second.is_some() {
            values.push(crate::report::value_text(
                experiment.points[k].second_value.as_ref(),
            ));
        }
        for v in &point.variants {
            for (path, title, scale) in PANELS {
                let mut record = values.clone();
                record.extend([
                    v.name.clone(),
                    title.to_string(),
                    (metric(&v.metrics, path) * scale).to_string(),
                    (metric(&v.ci95, path) * scale).to_string(),
                ]);
                w.write_record(&record)?;
            }
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(40);
    super::draw_title(
        &title_area,
        &format!(
            "{}: every metric against {}{}",
            experiment.name,
            super::axis_title(&sweep.path),
            super::second_axis_at(experiment)
        ),
        20,
    )?;
    let keys = super::variant_keys(&result.points[0].variants, true);
    let (legend_area, grid) = body.split_vertically(super::legend_height(&keys, super::SIZE.0));
    super::draw_legend(&legend_area, &keys)?;
    for ((path, title, scale), area) in PANELS.iter().zip(grid.split_evenly((3, 4))) {
        sweep_curves::draw(experiment, result, path, title, *scale, true, &area)?;
    }
    Ok(csv)
}
