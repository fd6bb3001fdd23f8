//! Headline metrics side by side: a panel per metric, a bar per variant with its 95 %
//! confidence interval as an error bar.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{FONT, axis_ticks, variant_color};
use crate::metrics::ExperimentResult;
use crate::metrics::Metric;
use crate::scenario::Experiment;

/// The metrics compared. Latency is the latency of successful requests: a policy that fails
/// fast must not look fast.
const PANELS: [Metric; 5] = [
    Metric::ATTEMPTS,
    Metric::AMPLIFICATION,
    Metric::SUCCESS_RATE,
    Metric::SUCCESS_P99,
    Metric::COMPLETION,
];

/// Draws the panels and returns their CSV.
pub fn draw<DB: DrawingBackend>(
    experiment: &Experiment,
    result: &ExperimentResult,
    root: &DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let (point, at) = super::focus_point(experiment, result);
    let graph = super::is_graph_run(experiment);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["metric", "variant", "mean", "ci95"])?;
    for k in PANELS {
        for v in &point.variants {
            w.write_record([
                super::metric_title(&k, graph),
                v.name.clone(),
                super::estimate(&k, v).0.to_string(),
                super::estimate(&k, v).1.to_string(),
            ])?;
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(44);
    // Whiskers only exist with two replications or more; the title says so only then.
    let whiskers = if experiment.replications > 1 {
        " (whiskers: 95 % intervals)"
    } else {
        " (1 replication: no intervals)"
    };
    let truncated = point.variants.iter().any(super::is_truncated);
    super::draw_title(
        &title_area,
        &format!(
            "{}: variants compared{at}{whiskers}{}",
            experiment.name,
            if truncated {
                "; pale bars: truncated, cut short by a limit"
            } else {
                ""
            }
        ),
        20,
    )?;
    let keys = super::variant_keys(&point.variants, false);
    let (legend_area, panels_area) =
        body.split_vertically(super::legend_height(&keys, super::SIZE.0));
    let n = keys.len();
    super::draw_legend(&legend_area, &keys)?;
    let areas = panels_area.split_evenly((1, PANELS.len()));
    for (k, area) in PANELS.iter().zip(&areas) {
        let title = super::metric_title(k, graph);
        let bars: Vec<(f64, f64)> = point
            .variants
            .iter()
            .map(|v| super::estimate(k, v))
            .collect();
        let top = bars.iter().map(|(m, h)| m + h).fold(0.0, f64::max);
        // An all-zero panel still gets a readable axis (not six ticks all "0").
        let top = if top > 0.0 { top * 1.12 } else { 1.0 };
        let y_ticks = axis_ticks(top);
        let mut chart = ChartBuilder::on(area)
            .margin(8)
            .caption(&title, (FONT, 15))
            .x_label_area_size(8)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..n as f64, super::style::span(0.0, top))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_x_axis()
            .y_labels(6)
            .y_label_formatter(&y_ticks)
            .label_style((FONT, 13))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(err)?;
        for (j, (mean, half)) in bars.iter().enumerate() {
            let color = variant_color(j);
            // A bar of 0 has no height, and a metric that does not apply (success latency
            // where nothing succeeded) has no bar: say so, or the panel looks empty.
            let missing = k.get(&point.variants[j].metrics).is_none();
            if missing || *mean == 0.0 {
                let style = TextStyle::from((FONT, 12).into_font())
                    .color(&color)
                    .pos(Pos::new(HPos::Center, VPos::Bottom));
                chart
                    .draw_series(std::iter::once(Text::new(
                        if missing { "n/a" } else { "0" },
                        (j as f64 + 0.5, top * 0.01),
                        style,
                    )))
                    .map_err(err)?;
            }
            let x0 = j as f64 + 0.15;
            let x1 = j as f64 + 0.85;
            // A truncated variant's bar is pale with a border: its numbers stop at the limit.
            let cut = super::is_truncated(&point.variants[j]);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x1, *mean)],
                    if cut {
                        color.mix(0.3).filled()
                    } else {
                        color.filled()
                    },
                )))
                .map_err(err)?;
            if cut {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, *mean)],
                        color.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
            if *half > 0.0 {
                // A whisker with caps; no marker, which would hide a short interval.
                let (xm, lo, hi) = (j as f64 + 0.5, (mean - half).max(0.0), mean + half);
                let (c0, c1) = (j as f64 + 0.38, j as f64 + 0.62);
                let whisker = [
                    vec![(xm, lo), (xm, hi)],
                    vec![(c0, lo), (c1, lo)],
                    vec![(c0, hi), (c1, hi)],
                ];
                chart
                    .draw_series(
                        whisker
                            .into_iter()
                            .map(|line| PathElement::new(line, BLACK.stroke_width(2))),
                    )
                    .map_err(err)?;
            }
        }
    }
    Ok(csv)
}
