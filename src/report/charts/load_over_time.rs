//! Load over time, a panel per variant: first attempts and retries stacked as bars, goodput
//! (requests that succeeded) as a line, and the server's queue on its own axis on the right.
//! The scenario's triggers (load spikes, fault windows) are shaded in light red, so a storm
//! that outlives its trigger shows as load beyond the band. The windows come from the
//! validated scenario, so `retrystorm report DIR` draws them again from its resolved scenario.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{FONT, tick, variant_color};
use super::triggers;
use crate::metrics::Column;
use crate::runner::ExperimentResult;
use crate::scenario::Experiment;

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
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    // Each variant's trigger windows, in seconds (a variant's patch may change them).
    let triggers = triggers::windows(&experiment.points[focus].variants);
    let any_trigger = triggers.iter().any(|t| !t.is_empty());
    let cols = [
        Column::FirstAttempts,
        Column::Retries,
        Column::Succeeded,
        Column::QueueLen,
    ];
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "variant".to_string(),
        "bucket_start_s".into(),
        "bucket_s".into(),
    ];
    header.extend(cols.iter().map(|c| c.name().to_string()));
    if any_trigger {
        header.push("trigger".into());
    }
    w.write_record(&header)?;
    for (j, v) in point.variants.iter().enumerate() {
        let width = v.bucket.as_nanos();
        for (i, row) in v.series.iter().enumerate() {
            let start = (i as u64 * width) as f64 / 1e9;
            let mut record = vec![
                v.name.clone(),
                start.to_string(),
                (width as f64 / 1e9).to_string(),
            ];
            record.extend(cols.iter().map(|c| row[*c as usize].to_string()));
            if any_trigger {
                // 1 when the bucket overlaps a trigger window (the shaded band).
                let end = ((i as u64 + 1) * width) as f64 / 1e9;
                let inside = triggers::overlaps(&triggers[j], start, end);
                record.push(u8::from(inside).to_string());
            }
            w.write_record(&record)?;
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(44);
    let bucket = point
        .variants
        .first()
        .map_or(crate::engine::SimDuration::ZERO, |v| v.bucket);
    // The queue gets its axis only when there is one (not with unlimited workers or a row).
    let any_queue = point
        .variants
        .iter()
        .any(|v| v.series.iter().any(|r| r[Column::QueueLen as usize] > 0.0));
    title_area
        .titled(
            &format!(
                "{}: load per {bucket}{at} (bars: first attempts + retries; black: succeeded{}{})",
                experiment.name,
                if any_queue { "; grey: queue" } else { "" },
                if any_trigger {
                    "; red band: trigger"
                } else {
                    ""
                }
            ),
            (FONT, 17),
        )
        .map_err(err)?;
    let ends = super::panel_ends(
        &point
            .variants
            .iter()
            .map(|v| {
                let busy = |r: &[f64; crate::metrics::series::COLUMNS]| {
                    r[Column::FirstAttempts as usize]
                        + r[Column::Retries as usize]
                        + r[Column::Succeeded as usize]
                        > 0.0
                };
                v.series
                    .iter()
                    .rposition(busy)
                    .map_or(0.0, |last| (last + 1) as f64 * v.bucket.as_secs_f64())
            })
            .collect::<Vec<_>>(),
    );
    let shared = ends.windows(2).all(|w| w[0] == w[1]);
    let areas = body.split_evenly((point.variants.len(), 1));
    for (j, (v, area)) in point.variants.iter().zip(&areas).enumerate() {
        let color = variant_color(j);
        let end = ends[j];
        let width = v.bucket.as_secs_f64();
        let bar = super::bar_width(width, end);
        let sent = |r: &[f64; crate::metrics::series::COLUMNS]| {
            r[Column::FirstAttempts as usize] + r[Column::Retries as usize]
        };
        let top = v
            .series
            .iter()
            .map(|r| sent(r).max(r[Column::Succeeded as usize]))
            .fold(0.0, f64::max)
            .max(1.0)
            * 1.1;
        let queue_top = v
            .series
            .iter()
            .map(|r| r[Column::QueueLen as usize])
            .fold(0.0, f64::max)
            .max(1.0)
            * 1.1;
        let last = j + 1 == point.variants.len();
        let mut chart = ChartBuilder::on(area)
            .margin_left(16)
            .margin_right(16)
            .margin_top(6)
            .x_label_area_size(if last || !shared { 40 } else { 18 })
            .y_label_area_size(64)
            .right_y_label_area_size(if any_queue { 56 } else { 0 })
            .caption(panel_title(v), (FONT, 17).into_font().color(&color))
            .build_cartesian_2d(0.0..end, 0.0..top)
            .map_err(err)?
            .set_secondary_coord(0.0..end, 0.0..queue_top);
        let mut mesh = chart.configure_mesh();
        mesh.label_style((FONT, 13))
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .y_labels(3)
            .x_labels(10)
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .axis_desc_style((FONT, 14))
            .y_desc("sent");
        if last || !shared {
            mesh.x_desc("time (s)");
        }
        mesh.draw().map_err(err)?;
        if any_queue {
            chart
                .configure_secondary_axes()
                .label_style((FONT, 13))
                .y_labels(3)
                .y_label_formatter(&tick)
                .axis_desc_style((FONT, 14))
                .y_desc("queue")
                .draw()
                .map_err(err)?;
        }
        let bars = v.series.iter().enumerate().flat_map(|(i, r)| {
            let x0 = i as f64 * width;
            let first = r[Column::FirstAttempts as usize];
            let total = sent(r);
            [
                Rectangle::new([(x0, 0.0), (x0 + bar, first)], color.mix(0.45).filled()),
                Rectangle::new([(x0, first), (x0 + bar, total)], color.filled()),
            ]
        });
        // The trigger bands go under the data.
        chart
            .draw_series(triggers::bands(&triggers[j], end, top))
            .map_err(err)?;
        chart.draw_series(bars).map_err(err)?;
        let goodput = v
            .series
            .iter()
            .enumerate()
            .map(|(i, r)| ((i as f64 + 0.5) * width, r[Column::Succeeded as usize]));
        chart
            .draw_series(LineSeries::new(goodput, BLACK.stroke_width(2)))
            .map_err(err)?;
        let queue = v
            .series
            .iter()
            .enumerate()
            .map(|(i, r)| ((i as f64 + 1.0) * width, r[Column::QueueLen as usize]));
        if any_queue {
            chart
                .draw_secondary_series(LineSeries::new(
                    queue,
                    RGBColor(150, 150, 150).stroke_width(1),
                ))
                .map_err(err)?;
        }
    }
    Ok(csv)
}

/// A panel's title: the variant's name, with the note of a variant whose runs split.
fn panel_title(v: &crate::runner::VariantResult) -> String {
    match triggers::split_note(v) {
        Some(note) => format!("{} ({note})", v.name),
        None => v.name.clone(),
    }
}
