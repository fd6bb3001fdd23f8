//! The latency distribution of successful logical requests per variant, as a cumulative
//! distribution on a log time axis, with each variant's p50 and p99 marked (pooled over
//! replications, so the dots sit on their curves). Failed requests are not in the curves, or a
//! policy that fails fast would look fast: the legend gives each variant's failure share.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::SIZE;
use super::latency_histogram;
use super::style::{FONT, variant_color};
use crate::metrics::ExperimentResult;
use crate::metrics::{LATENCY_BINS, latency_bin_upper_ms};
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
    // In a call graph a fallback's answer counts with the successes.
    let graph = super::is_graph_run(experiment);
    let x_desc = format!(
        "latency of {}, start to {} (ms, log scale)",
        if graph {
            "answered requests"
        } else {
            "successful requests"
        },
        if graph { "answer" } else { "success" }
    );
    // Per variant: (upper edge in ms, fraction of requests at or below it), non-empty range.
    let curves: Vec<Vec<(f64, f64)>> = point
        .variants
        .iter()
        .map(|v| {
            let total: f64 = v.success_latency_bins.iter().sum();
            let mut acc = 0.0;
            (0..LATENCY_BINS)
                .map(|i| {
                    acc += v.success_latency_bins[i];
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
            if v.success_latency_bins[i] > 0.0 {
                w.write_record([
                    v.name.clone(),
                    edge.to_string(),
                    v.success_latency_bins[i].to_string(),
                    cdf.to_string(),
                ])?;
            }
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    // The x range: where any variant has requests (the bin under 1 us aside, see
    // latency_histogram::x_range), shared with the histogram.
    let (first, last) = latency_histogram::x_range(&point.variants);
    let lo = latency_histogram::bin_lower_ms(first).max(latency_bin_upper_ms(0) / 2.0);
    let hi = latency_bin_upper_ms(last);

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(48);
    super::draw_title(
        &title_area,
        &format!(
            "{}: latency of {}{at}",
            experiment.name,
            super::latency_of(experiment)
        ),
        20,
    )?;
    // The legend sits above the plot, never over the curves. A curve starts at the share it has
    // reached at the axis' left edge, so requests left of the axis need no note here.
    let mut keys = super::variant_keys(&point.variants, true);
    for (key, v) in keys.iter_mut().zip(&point.variants) {
        if v.metrics.succeeded == 0.0 {
            key.label.push_str(if graph {
                " (no answers)"
            } else {
                " (no successes)"
            });
            continue;
        }
        if let Some(note) = failed_share(v) {
            key.label.push_str(&format!(" ({note})"));
        }
    }
    let (legend_area, plot) = body.split_vertically(super::legend_height(&keys, SIZE.0));
    super::draw_legend(&legend_area, &keys)?;
    let mut chart = ChartBuilder::on(&plot)
        .margin(16)
        .margin_top(8)
        .x_label_area_size(52)
        .y_label_area_size(72)
        .build_cartesian_2d(super::style::log_span(lo, hi).log_scale(), 0.0..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc.as_str())
        .y_desc(if graph {
            "share of answers at or below"
        } else {
            "share of successes at or below"
        })
        .x_label_formatter(&latency_histogram::log_tick)
        .x_labels(30)
        .y_label_formatter(&|y| format!("{:.0} %", y * 100.0))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .map_err(err)?;
    for (j, (v, curve)) in point.variants.iter().zip(&curves).enumerate() {
        let color = variant_color(j);
        if v.metrics.succeeded == 0.0 {
            // No success, no distribution: the legend says so, and nothing is drawn at 0.
            continue;
        }
        // The share is known exactly at bin edges only, so the curve is drawn as steps that
        // rise at each bin's upper edge: a quantile inside a bin then sits on the riser, never
        // on an interpolated slope that no data supports.
        let start = if first > 0 { curve[first - 1].1 } else { 0.0 };
        let mut steps: Vec<(f64, f64)> = vec![(lo, start)];
        let mut level = start;
        for &(edge, share) in curve.iter().filter(|(edge, _)| *edge >= lo && *edge <= hi) {
            if share != level {
                steps.push((edge, level));
                steps.push((edge, share));
                level = share;
            }
        }
        steps.push((hi, level));
        chart
            .draw_series(std::iter::once(super::variant_line(steps, j, color, 3)))
            .map_err(err)?;
        let marks = [
            (v.metrics.success_latency_ms.p50, 0.5),
            (v.metrics.success_latency_ms.p99, 0.99),
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
    Ok(csv)
}

/// "42 % failed" for a variant some of whose requests failed (they are not in the curves).
pub fn failed_share(v: &crate::metrics::VariantResult) -> Option<String> {
    let f = v.metrics.failure_rate;
    (f > 0.0).then(|| {
        if f < 0.001 {
            "< 0.1 % failed".to_string()
        } else {
            format!("{:.1} % failed", 100.0 * f)
        }
    })
}
