//! A time-series column over time as a rate, one panel per variant on one time axis and one
//! y scale: the retry-storm picture (retries pile up on a few instants without jitter and
//! spread with it), or when attempts reached the server. Trigger windows are shaded and a
//! variant whose replications split carries the same note as in the load-over-time figure.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::over_time::{self, Frame, PanelSpec};
use super::style::variant_color;
use super::triggers;
use crate::metrics::Column;
use crate::metrics::ExperimentResult;
use crate::scenario::Experiment;

/// Draws the panels and returns their CSV: `variant, bucket_start_s, bucket_s,
/// <column>_per_s` (and `trigger`), the rates drawn.
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
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let windows = triggers::windows(&experiment.points[focus].variants);
    let any_trigger = windows.iter().any(|w| !w.is_empty());
    let col = column as usize;
    let variants: Vec<_> = point.variants.iter().collect();
    let frame = Frame::of(&variants);
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let csv = over_time::write_csv(
        &frame,
        &names,
        &[format!("{}_per_s", column.name())],
        &windows,
        |_, r| vec![r[col].to_string()],
    )?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let reps = if experiment.replications > 1 {
        format!(", mean of {} replications", experiment.replications)
    } else {
        String::new()
    };
    let (title_area, body) = root.split_vertically(48);
    super::draw_title(
        &title_area,
        &format!(
            "{}: {label} per second{at} ({}{reps}{})",
            experiment.name,
            frame.bucket_words(),
            if any_trigger {
                "; red band: trigger"
            } else {
                ""
            }
        ),
        19,
    )?;
    // One y scale for every panel.
    let top = frame.max(|r| r[col]).max(1e-9) * 1.1;
    // The first word of the label ("retries", "attempts") and the unit.
    let y_desc = format!("{} (/s)", label.split(' ').next().unwrap_or(label));
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
                y_desc: &y_desc,
                y_format: None,
                right: None,
                last: j + 1 == variants.len(),
            },
        )?;
        chart
            .draw_series(triggers::bands(
                windows.get(j).map_or(&[][..], Vec::as_slice),
                frame.x1,
                top,
            ))
            .map_err(err)?;
        let style = if super::is_truncated(v) {
            color.mix(0.45).filled()
        } else {
            color.filled()
        };
        chart
            .draw_series(over_time::bars(
                &frame,
                &frame.rows[j],
                |_| 0.0,
                |r| r[col],
                style,
            ))
            .map_err(err)?;
    }
    Ok(csv)
}
