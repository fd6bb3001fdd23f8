//! Every headline metric against the swept value, one small panel each, with one legend. With
//! a two-axis sweep, against the first axis at the second axis' focus value.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep_curves;
use crate::metrics::ExperimentResult;
use crate::metrics::Metric;
use crate::scenario::Experiment;

/// The panels. Latency is the latency of successful requests.
const PANELS: [Metric; 12] = [
    Metric::REQUESTS,
    Metric::SUCCESS_RATE,
    Metric::ATTEMPTS,
    Metric::RETRIES,
    Metric::AMPLIFICATION,
    Metric::SUCCESS_P50,
    Metric::SUCCESS_P99,
    Metric::COMPLETION,
    Metric::SERVED,
    Metric::WASTED,
    Metric::REJECTED,
    Metric::UTILIZATION,
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
    let graph = super::is_graph_run(experiment);
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
            for k in PANELS {
                let mut record = values.clone();
                record.extend([
                    v.name.clone(),
                    super::metric_title(&k, graph),
                    cell(k.estimate(&v.metrics, &v.ci95).map(|e| e.0)),
                    cell(k.estimate(&v.metrics, &v.ci95).map(|e| e.1)),
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
            sweep.label.clone(),
            super::second_axis_at(experiment)
        ),
        20,
    )?;
    let keys = super::variant_keys(&result.points[0].variants, true);
    let (legend_area, grid) = body.split_vertically(super::legend_height(&keys, super::SIZE.0));
    super::draw_legend(&legend_area, &keys)?;
    for (k, area) in PANELS.iter().zip(grid.split_evenly((3, 4))) {
        let title = super::metric_title(k, graph);
        sweep_curves::draw(experiment, result, k, &title, true, &area)?;
    }
    Ok(csv)
}

/// A CSV cell: the number, or empty where the metric does not apply.
fn cell(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| x.to_string())
}
