//! The latency distribution of logical requests as a histogram, a panel per variant on one
//! log time axis and one y scale (the share of requests per log-spaced bin, in %): where the
//! CDF shows the order, this shows the shape (two humps for a bimodal run, a spike at the
//! timeout for requests that gave up).
//!
//! Requests that ended in under 1 us (instant rejections, permanent failures) or a few fast
//! outliers would need the axis to reach down several empty decades; they are counted in the
//! panel's title (and are in the CSV) instead. [`x_range`] is shared with the CDF figure.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{FONT, variant_color};
use crate::metrics::{ExperimentResult, VariantResult};
use crate::metrics::{LATENCY_BINS, LATENCY_BINS_PER_DECADE, latency_bin_upper_ms};
use crate::scenario::Experiment;

/// The lower edge of latency bin `i`, in milliseconds (0 for the first bin, which holds
/// everything under 1 us).
pub fn bin_lower_ms(i: usize) -> f64 {
    if i == 0 {
        0.0
    } else {
        latency_bin_upper_ms(i - 1)
    }
}

/// The share of requests a variant may have left of the axis before the axis reaches
/// further down: a few fast outliers must not add decades of empty axis.
const LEFT_TAIL: f64 = 0.005;

/// The bins the latency axis shows, `first..=last`, over every variant: from the first bin
/// where some variant has passed 0.5 % of its requests (counting from 1 us; the bin under
/// 1 us never decides) to the last bin with requests, one bin of room on each side. At least
/// half a decade wide. What lies left of the axis is counted in [`left_share`].
pub fn x_range(variants: &[VariantResult]) -> (usize, usize) {
    let first = variants
        .iter()
        .filter_map(|v| {
            let total: f64 = v.success_latency_bins.iter().sum();
            let mut acc = 0.0;
            (1..LATENCY_BINS).find(|&i| {
                acc += v.success_latency_bins[i];
                total > 0.0 && acc > 0.0 && acc >= LEFT_TAIL * total
            })
        })
        .min();
    let last = (1..LATENCY_BINS)
        .rev()
        .find(|&i| variants.iter().any(|v| v.success_latency_bins[i] > 0.0));
    let (first, last) = match (first, last) {
        (Some(f), Some(l)) => (f.saturating_sub(1).max(1), (l + 1).min(LATENCY_BINS - 1)),
        _ => (0, LATENCY_BINS_PER_DECADE),
    };
    let min_width = LATENCY_BINS_PER_DECADE / 2;
    if last - first < min_width {
        let grow = min_width - (last - first);
        let first = first.saturating_sub(grow / 2).max(1);
        (first, (first + min_width).min(LATENCY_BINS - 1))
    } else {
        (first, last)
    }
}

/// The share (%) of a variant's requests in bins left of `first` (not drawn), if any, with
/// the words that say so: "2.9 % under 0.02 ms, left of the axis".
pub fn left_share(v: &VariantResult, first: usize) -> Option<String> {
    let total: f64 = v.success_latency_bins.iter().sum();
    let left: f64 = v.success_latency_bins[..first].iter().sum();
    if total <= 0.0 || left <= 0.0 {
        return None;
    }
    let pct = left / total * 100.0;
    let pct = if pct < 0.05 {
        "< 0.1 %".to_string()
    } else {
        format!("{pct:.1} %")
    };
    Some(format!(
        "{pct} under {} ms, left of the axis",
        super::tick(&bin_lower_ms(first))
    ))
}

/// A log-axis tick label: only 1, 2 and 5 times a power of ten are labelled, so ticks never
/// crowd ("8 9 10"); the others stay unlabelled.
pub fn log_tick(x: &f64) -> String {
    if *x <= 0.0 {
        return String::new();
    }
    let mantissa = x / 10f64.powf(x.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 0.02 * m)
    {
        super::tick(x)
    } else {
        String::new()
    }
}

/// Draws the panels and returns their CSV: `variant, latency_ms_from, latency_ms_to,
/// requests, share_pct`, one row per bin with requests (shares of a variant sum to 100).
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
    // shares[variant][bin] in % of the variant's requests.
    let shares: Vec<Vec<f64>> = point
        .variants
        .iter()
        .map(|v| {
            let total: f64 = v.success_latency_bins.iter().sum();
            v.success_latency_bins
                .iter()
                .map(|n| if total > 0.0 { n / total * 100.0 } else { 0.0 })
                .collect()
        })
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "variant",
        "latency_ms_from",
        "latency_ms_to",
        "requests",
        "share_pct",
    ])?;
    for (v, share) in point.variants.iter().zip(&shares) {
        for (i, s) in share.iter().enumerate() {
            if v.success_latency_bins[i] > 0.0 {
                w.write_record([
                    v.name.clone(),
                    bin_lower_ms(i).to_string(),
                    latency_bin_upper_ms(i).to_string(),
                    v.success_latency_bins[i].to_string(),
                    s.to_string(),
                ])?;
            }
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let (first, last) = x_range(&point.variants);
    let lo = bin_lower_ms(first).max(latency_bin_upper_ms(0) / 2.0);
    let hi = latency_bin_upper_ms(last);
    // One y scale: the largest share of any drawn bin.
    let top = shares
        .iter()
        .flat_map(|s| &s[first..=last])
        .copied()
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.12;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(48);
    super::draw_title(
        &title_area,
        &format!(
            "{}: latency histogram of {}{at} (share per bin, {} bins per decade)",
            experiment.name,
            super::latency_of(experiment),
            LATENCY_BINS_PER_DECADE
        ),
        18,
    )?;
    let n = point.variants.len();
    let areas = body.split_evenly((n, 1));
    for (j, ((v, share), area)) in point.variants.iter().zip(&shares).zip(&areas).enumerate() {
        let color = variant_color(j);
        let mut title = super::display_name(v);
        if let Some(note) = super::latency_cdf::failed_share(v) {
            title.push_str(&format!(" ({note})"));
        }
        if let Some(note) = left_share(v, first) {
            title.push_str(&format!(" ({note})"));
        }
        let last_panel = j + 1 == n;
        let mut chart = ChartBuilder::on(area)
            .margin_left(12)
            .margin_right(24)
            .margin_top(4)
            .x_label_area_size(if last_panel { 38 } else { 20 })
            .y_label_area_size(72)
            .caption(title, (FONT, 16).into_font().color(&color))
            .build_cartesian_2d(
                super::style::log_span(lo, hi).log_scale(),
                super::style::span(0.0, top),
            )
            .map_err(err)?;
        let percent = |y: &f64| format!("{} %", super::tick(y));
        let mut mesh = chart.configure_mesh();
        mesh.label_style((FONT, 13))
            .x_label_formatter(&log_tick)
            .y_label_formatter(&percent)
            .y_labels(3)
            .x_labels(30)
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .axis_desc_style((FONT, 13))
            .y_desc(if graph { "answers" } else { "successes" });
        if last_panel {
            mesh.x_desc(x_desc.as_str());
        }
        mesh.draw().map_err(err)?;
        let style = if super::is_truncated(v) {
            color.mix(0.45).filled()
        } else {
            color.filled()
        };
        chart
            .draw_series((first.max(1)..=last).filter(|&i| share[i] > 0.0).map(|i| {
                Rectangle::new(
                    [(bin_lower_ms(i), 0.0), (latency_bin_upper_ms(i), share[i])],
                    style,
                )
            }))
            .map_err(err)?;
    }
    Ok(csv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_label_only_one_two_five() {
        assert_eq!(log_tick(&10.0), "10");
        assert_eq!(log_tick(&2.0), "2");
        assert_eq!(log_tick(&0.5), "0.5");
        assert_eq!(log_tick(&8.0), "");
        assert_eq!(log_tick(&9.0), "");
    }
}
