//! The latency distribution of logical requests per variant, as a cumulative distribution on
//! a log time axis, with each variant's p50 and p99 marked.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{FONT, variant_color};
use crate::metrics::{LATENCY_BINS, latency_bin_upper_ms};
use crate::runner::ExperimentResult;
use crate::scenario::Experiment;

/// Draws the curves and returns their CSV.
pub fn draw<DB: DrawingBackend>(
    experiment: &Experiment,
    result: &ExperimentResult,
    root: &DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let (point, at) = super::focus_point(experiment, result);
    // Per variant: (upper edge in ms, fraction of requests at or below it), non-empty range.
    let curves: Vec<Vec<(f64, f64)>> = point
        .variants
        .iter()
        .map(|v| {
            let total: f64 = v.latency_bins.iter().sum();
            let mut acc = 0.0;
            (0..LATENCY_BINS)
                .map(|i| {
                    acc += v.latency_bins[i];
                    (
                        latency_bin_upper_ms(i),
                        if total > 0.0 { acc / total } else { 0.0 },
                    )
                })
                .collect()
        })
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "variant",
        "latency_ms_at_most",
        "requests",
        "cumulative_fraction",
    ])?;
    for (v, curve) in point.variants.iter().zip(&curves) {
        for (i, (edge, cdf)) in curve.iter().enumerate() {
            if v.latency_bins[i] > 0.0 {
                w.write_record([
                    v.name.clone(),
                    edge.to_string(),
                    v.latency_bins[i].to_string(),
                    cdf.to_string(),
                ])?;
            }
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    // The x range: from the first to the last non-empty bin of any variant.
    let used = |f: fn(&mut dyn Iterator<Item = usize>) -> Option<usize>| {
        point
            .variants
            .iter()
            .filter_map(|v| f(&mut (0..LATENCY_BINS).filter(|i| v.latency_bins[*i] > 0.0)))
            .collect::<Vec<_>>()
    };
    let first = used(|it| it.next()).into_iter().min().unwrap_or(0);
    let last = used(|it| it.last())
        .into_iter()
        .max()
        .unwrap_or(LATENCY_BINS - 1);
    let lo = latency_bin_upper_ms(first.saturating_sub(2));
    let hi = latency_bin_upper_ms((last + 2).min(LATENCY_BINS - 1));

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("{}: latency of logical requests{at}", experiment.name),
            (FONT, 22),
        )
        .margin(16)
        .x_label_area_size(52)
        .y_label_area_size(72)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency, start to final outcome (ms, log scale)")
        .y_desc("fraction of requests at or below")
        .x_label_formatter(&|x| super::tick(x))
        .y_label_formatter(&|y| format!("{:.0} %", y * 100.0))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .map_err(err)?;
    for (j, (v, curve)) in point.variants.iter().zip(&curves).enumerate() {
        let color = variant_color(j);
        let steps: Vec<(f64, f64)> = curve
            .iter()
            .filter(|(edge, _)| *edge >= lo && *edge <= hi)
            .copied()
            .collect();
        chart
            .draw_series(LineSeries::new(steps, color.stroke_width(3)))
            .map_err(err)?
            .label(v.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
        let marks = [
            (v.metrics.latency_ms.p50, 0.5),
            (v.metrics.latency_ms.p99, 0.99),
        ];
        chart
            .draw_series(
                marks
                    .into_iter()
                    .filter(|(x, _)| *x >= lo && *x <= hi)
                    .map(|p| Circle::new(p, 6, color.filled())),
            )
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font((FONT, 16))
        .draw()
        .map_err(err)?;
    Ok(csv)
}
