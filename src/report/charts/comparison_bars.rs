//! Headline metrics side by side: a panel per metric, a bar per variant with its 95 %
//! confidence interval as an error bar.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{self, Area, Drawn};
use super::style::{FONT, axis_ticks, variant_color};
use super::{Chart, Run, Table};
use crate::metrics::Metric;

/// The metrics compared. Latency is the latency of successful requests: a policy that fails
/// fast must not look fast.
const PANELS: [Metric; 5] = [
    Metric::ATTEMPTS,
    Metric::AMPLIFICATION,
    Metric::SUCCESS_RATE,
    Metric::SUCCESS_P99,
    Metric::COMPLETION,
];

/// The comparison figure.
pub struct ComparisonBars;

/// A variant's name and (mean, 95 % half-width) of one metric, `None` where the metric does
/// not apply (success latency where nothing succeeded).
type Bar = (String, Option<(f64, f64)>);

/// Per panel: the metric's title and each variant's bar.
pub struct Bars(Vec<(String, Vec<Bar>)>);

impl Table for Bars {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        w.write_record(["metric", "variant", "mean", "ci95"])?;
        for (title, bars) in &self.0 {
            for (name, bar) in bars {
                let (mean, half) = bar.unwrap_or((0.0, 0.0));
                w.write_record([title, name, &mean.to_string(), &half.to_string()])?;
            }
        }
        Ok(())
    }
}

impl Chart for ComparisonBars {
    type Table = Bars;

    fn stem(&self) -> &'static str {
        "comparison"
    }

    fn caption(&self, run: &Run) -> String {
        if run.graph() {
            "The headline numbers side by side; a bar's whisker is its 95 % confidence interval. In this call graph, work and amplification count the attempts at the entry service only: the services behind it are in the per-service table, call-graph and service-load-over-time."
        } else {
            "The headline numbers side by side; a bar's whisker is its 95 % confidence interval."
        }
        .to_string()
    }

    fn table(&self, run: &Run) -> Result<Bars> {
        let graph = run.graph();
        let panel = |k: Metric| {
            let bars = run.point().variants.iter();
            let bars = bars.map(|v| (v.name.clone(), k.estimate(&v.metrics, &v.ci95)));
            (super::metric_title(&k, graph), bars.collect())
        };
        Ok(Bars(PANELS.into_iter().map(panel).collect()))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Bars, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        // Whiskers only exist with two replications or more; the title says so only then.
        let whiskers = if run.experiment.replications > 1 {
            " (whiskers: 95 % intervals)"
        } else {
            " (1 replication: no intervals)"
        };
        let truncated = variants.iter().any(|v| v.is_truncated());
        let title = format!(
            "{}: variants compared{}{whiskers}{}",
            run.name(),
            run.at(),
            if truncated {
                "; pale bars: truncated, cut short by a limit"
            } else {
                ""
            }
        );
        let body = canvas::titled(root, &title, 44, 20)?;
        let keys = canvas::variant_keys(variants, false);
        let panels = canvas::legend(&body, &keys)?;
        let areas = panels.split_evenly((1, PANELS.len()));
        for ((title, bars), area) in table.0.iter().zip(&areas) {
            let cut: Vec<bool> = variants.iter().map(|v| v.is_truncated()).collect();
            draw_panel(area, title, bars, &cut)?;
        }
        Ok(())
    }
}

/// One metric's panel: a bar per variant (pale with a border where `cut`, truncated), with
/// its whisker.
fn draw_panel<DB: DrawingBackend>(
    area: &Area<DB>,
    title: &str,
    bars: &[Bar],
    cut: &[bool],
) -> Result<()> {
    let top = bars
        .iter()
        .filter_map(|(_, b)| b.map(|(m, h)| m + h))
        .fold(0.0, f64::max);
    // An all-zero panel still gets a readable axis (not six ticks all "0").
    let top = if top > 0.0 { top * 1.12 } else { 1.0 };
    let y_ticks = axis_ticks(top);
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .caption(title, (FONT, 15))
        .x_label_area_size(8)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..bars.len() as f64, super::style::span(0.0, top))
        .drawn()?;
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
        .drawn()?;
    for (j, (_, bar)) in bars.iter().enumerate() {
        let color = variant_color(j);
        let (mean, half) = bar.unwrap_or((0.0, 0.0));
        // A bar of 0 has no height, and a metric that does not apply has no bar: say so, or
        // the panel looks empty.
        if bar.is_none() || mean == 0.0 {
            let style = TextStyle::from((FONT, 12).into_font())
                .color(&color)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            let text = if bar.is_none() { "n/a" } else { "0" };
            let at = (j as f64 + 0.5, top * 0.01);
            chart
                .draw_series(std::iter::once(Text::new(text, at, style)))
                .drawn()?;
        }
        let corners = [(j as f64 + 0.15, 0.0), (j as f64 + 0.85, mean)];
        // A truncated variant's bar is pale with a border: its numbers stop at the limit.
        let fill = if cut[j] {
            color.mix(0.3).filled()
        } else {
            color.filled()
        };
        let mut shapes = vec![Rectangle::new(corners, fill)];
        if cut[j] {
            shapes.push(Rectangle::new(corners, color.stroke_width(2)));
        }
        chart.draw_series(shapes).drawn()?;
        if half > 0.0 {
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
                .drawn()?;
        }
    }
    Ok(())
}
