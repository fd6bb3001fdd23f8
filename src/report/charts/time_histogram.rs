//! A time-series column over time, one panel per variant: the retry-storm picture (retries
//! pile up on a few instants without jitter and spread with it), or when writes happened.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{FONT, tick, variant_color};
use crate::metrics::Column;
use crate::runner::ExperimentResult;
use crate::scenario::Experiment;

/// Draws the panels and returns their CSV.
pub fn draw<DB: DrawingBackend>(
    experiment: &Experiment,
    result: &ExperimentResult,
    column: Column,
    label: &str,
    root: &DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let (point, at) = super::focus_point(experiment, result);
    let col = column as usize;

    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["variant", "bucket_start_s", "bucket_s", column.name()])?;
    // Per variant: bucket width in seconds and the values (mean per replication).
    let panels: Vec<(String, f64, Vec<f64>)> = point
        .variants
        .iter()
        .map(|v| {
            let width = v.bucket.as_secs_f64();
            let values: Vec<f64> = v.series.iter().map(|r| r[col]).collect();
            (v.name.clone(), width, values)
        })
        .collect();
    for (name, width, values) in &panels {
        for (i, y) in values.iter().enumerate() {
            w.write_record([
                name.clone(),
                (i as f64 * width).to_string(),
                width.to_string(),
                y.to_string(),
            ])?;
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let reps = if experiment.replications > 1 {
        format!(" (mean of {} replications)", experiment.replications)
    } else {
        String::new()
    };
    let bucket = point
        .variants
        .first()
        .map_or(crate::engine::SimDuration::ZERO, |v| v.bucket);
    let y_desc = format!("{label} per {bucket}");
    let (title_area, body) = root.split_vertically(44);
    title_area
        .titled(
            &format!("{}: {label}{at}{reps}", experiment.name),
            (FONT, 21),
        )
        .map_err(err)?;
    let ends = super::panel_ends(
        &panels
            .iter()
            .map(|(_, width, values)| {
                values
                    .iter()
                    .rposition(|y| *y > 0.0)
                    .map_or(0.0, |last| (last + 1) as f64 * width)
            })
            .collect::<Vec<_>>(),
    );
    let shared = ends.windows(2).all(|w| w[0] == w[1]);
    let areas = body.split_evenly((panels.len(), 1));
    for (j, ((name, width, values), area)) in panels.iter().zip(&areas).enumerate() {
        let color = variant_color(j);
        let end = ends[j];
        let bar = super::bar_width(*width, end);
        let top = values.iter().copied().fold(0.0, f64::max).max(1.0) * 1.1;
        let last = j + 1 == panels.len();
        let mut chart = ChartBuilder::on(area)
            .margin_left(16)
            .margin_right(24)
            .margin_top(6)
            .x_label_area_size(if last || !shared { 40 } else { 18 })
            .y_label_area_size(70)
            .caption(name.as_str(), (FONT, 17).into_font().color(&color))
            .build_cartesian_2d(0.0..end, 0.0..top)
            .map_err(err)?;
        let mut mesh = chart.configure_mesh();
        mesh.label_style((FONT, 14))
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style((FONT, 15))
            .y_labels(3)
            .x_labels(10)
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .y_desc(if j == panels.len() / 2 {
                y_desc.as_str()
            } else {
                ""
            });
        if last || !shared {
            mesh.x_desc("time (s)");
        }
        mesh.draw().map_err(err)?;
        chart
            .draw_series(
                values
                    .iter()
                    .enumerate()
                    .filter(|(_, y)| **y > 0.0)
                    .map(|(i, y)| {
                        let x0 = i as f64 * width;
                        Rectangle::new([(x0, 0.0), (x0 + bar, *y)], color.filled())
                    }),
            )
            .map_err(err)?;
    }
    Ok(csv)
}
