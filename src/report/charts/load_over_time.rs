//! Load over time, a panel per variant on one time axis and one scale: first attempts and
//! retries stacked as bars, goodput (requests that succeeded) as a line, all as rates per
//! second, and the server's queue on its own axis on the right (one queue scale for every
//! panel too). The scenario's triggers (load spikes, fault windows) are shaded in light red,
//! so a storm that outlives its trigger shows as load beyond the band. The windows come from
//! the validated scenario, so `retrystorm report DIR` draws them again from its resolved
//! scenario.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::over_time::{self, Frame, PanelSpec};
use super::style::variant_color;
use super::triggers;
use crate::metrics::Column;
use crate::metrics::ExperimentResult;
use crate::scenario::Experiment;

/// The figure's caption: `caption`, and where some variant's clients rejected requests
/// locally, that those never left them and so are not in the bars.
pub fn caption(caption: &str, result: &ExperimentResult) -> String {
    let local = result
        .points
        .iter()
        .flat_map(|p| &p.variants)
        .any(|v| v.metrics.failed.throttled_locally > 0.0);
    if local {
        format!(
            "{caption} Requests a client's adaptive throttle rejected never left it: they are not in the bars (`failed.throttled_locally` in summary.json counts them)."
        )
    } else {
        caption.to_string()
    }
}

/// Draws the panels and returns their CSV: `variant, bucket_start_s, bucket_s,
/// first_attempts_per_s, retries_per_s, succeeded_per_s, queue_len` (and `trigger`).
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
    let windows = triggers::windows(&experiment.points[focus].variants);
    let any_trigger = windows.iter().any(|t| !t.is_empty());
    let variants: Vec<_> = point.variants.iter().collect();
    let frame = Frame::of(&variants);
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let cols = [
        Column::FirstAttempts,
        Column::Retries,
        Column::Succeeded,
        Column::QueueLen,
    ];
    let header: Vec<String> = cols
        .iter()
        .map(|c| {
            if c.is_state() {
                c.name().to_string()
            } else {
                format!("{}_per_s", c.name())
            }
        })
        .collect();
    let csv = over_time::write_csv(&frame, &names, &header, &windows, |_, r| {
        cols.iter().map(|c| r[*c as usize].to_string()).collect()
    })?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(48);
    // The queue gets its axis only when there is one (not with unlimited workers or a row).
    let queue_top = frame.max(|r| r[Column::QueueLen as usize]);
    let any_queue = queue_top > 0.0;
    super::draw_title(
        &title_area,
        &format!(
            "{}: load per second{at} ({}; bars: first attempts (pale) + {}; black: succeeded{}{})",
            experiment.name,
            frame.bucket_words(),
            match (
                point.variants.iter().any(|v| v.metrics.hedges > 0.0),
                point
                    .variants
                    .iter()
                    .any(|v| v.metrics.failed.throttled_locally > 0.0),
            ) {
                (false, false) => "retries",
                (true, false) => "retries and hedges",
                (false, true) => "retries that left the clients",
                (true, true) => "retries and hedges that left the clients",
            },
            if any_queue { "; grey: queue" } else { "" },
            if any_trigger {
                "; red band: trigger"
            } else {
                ""
            }
        ),
        17,
    )?;
    // One scale for every panel, and one for every queue.
    let top = frame
        .max(|r| over_time::sent(r).max(r[Column::Succeeded as usize]))
        .max(1e-9)
        * 1.1;
    let queue_top = queue_top.max(1.0) * 1.1;
    let areas = body.split_evenly((variants.len(), 1));
    for (j, (v, area)) in variants.iter().zip(&areas).enumerate() {
        let color = variant_color(j);
        let title = over_time::panel_title(v);
        let mut chart = over_time::panel(
            area,
            &frame,
            &PanelSpec {
                title: &title,
                color,
                top,
                y_desc: "sent (/s)",
                y_format: None,
                right: any_queue.then_some((queue_top, "queue")),
                last: j + 1 == variants.len(),
            },
        )?;
        let rows = &frame.rows[j];
        let truncated = super::is_truncated(v);
        let mix = if truncated { (0.25, 0.5) } else { (0.45, 1.0) };
        over_time::draw_load(
            &mut chart,
            &frame,
            rows,
            windows.get(j).map_or(&[][..], Vec::as_slice),
            top,
            color,
            mix,
        )?;
        if any_queue {
            // States are sampled at the end of their bucket.
            let queue = rows
                .iter()
                .enumerate()
                .map(|(i, r)| (frame.start(i) + frame.bucket, r[Column::QueueLen as usize]));
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
