//! Single runs of a bimodal variant: when a variant's replications split between recovering
//! and staying collapsed, its mean over replications looks like no run at all. This figure
//! shows, per such variant, a typical recovered and a typical collapsed replication side by
//! side (the median total goodput within each group, see [`crate::runner::examples`]): what
//! the clients sent (pale: first attempts, dark: retries) and what succeeded (black line),
//! per second, on the time axis and scale every panel shares.
//!
//! The rows come from [`VariantResult::examples`], which only a run fills in; the CSV holds
//! exactly what is drawn, so `retrystorm report DIR` can draw it again from there.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::over_time::{self, Frame, PanelSpec, Row};
use super::style::variant_color;
use super::triggers;
use crate::metrics::Column;
use crate::metrics::{ExperimentResult, VariantResult};
use crate::scenario::Experiment;

/// Height of one variant's row of panels, in pixels.
pub const ROW_HEIGHT: u32 = 230;

/// The variants of the focus point that have example runs, by position in the file.
pub fn shown(variants: &[VariantResult]) -> Vec<usize> {
    variants
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.examples.is_empty())
        .map(|(j, _)| j)
        .collect()
}

/// Draws the panels and returns their CSV: `variant, replication, run, bucket_start_s,
/// bucket_s, first_attempts_per_s, retries_per_s, succeeded_per_s` (and `trigger`).
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
    let windows = triggers::windows(&experiment.points[focus].variants);
    let shown = shown(&point.variants);
    // Every example of every shown variant, in order: (variant index, example).
    let runs: Vec<(usize, &crate::metrics::ExampleRun)> = shown
        .iter()
        .flat_map(|&j| point.variants[j].examples.iter().map(move |e| (j, e)))
        .collect();
    let series: Vec<(&[Row], f64)> = runs
        .iter()
        .map(|(_, e)| (e.series.as_slice(), e.bucket.as_secs_f64()))
        .collect();
    let frame = Frame::new(&series);
    let cols = [Column::FirstAttempts, Column::Retries, Column::Succeeded];
    let any_trigger = runs
        .iter()
        .any(|(j, _)| windows.get(*j).is_some_and(|w| !w.is_empty()));
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "variant".to_string(),
        "replication".into(),
        "run".into(),
        "bucket_start_s".into(),
        "bucket_s".into(),
    ];
    header.extend(cols.iter().map(|c| format!("{}_per_s", c.name())));
    if any_trigger {
        header.push("trigger".into());
    }
    w.write_record(&header)?;
    for ((j, e), rows) in runs.iter().zip(&frame.rows) {
        for (i, r) in rows.iter().enumerate() {
            let start = frame.start(i);
            let mut record = vec![
                point.variants[*j].name.clone(),
                e.replication.to_string(),
                e.label.clone(),
                start.to_string(),
                frame.bucket.to_string(),
            ];
            record.extend(cols.iter().map(|c| r[*c as usize].to_string()));
            if any_trigger {
                let inside = windows
                    .get(*j)
                    .is_some_and(|w| triggers::overlaps(w, start, start + frame.bucket));
                record.push(u8::from(inside).to_string());
            }
            w.write_record(&record)?;
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(48);
    super::draw_title(
        &title_area,
        &format!(
            "{}: single runs where the replications split{at} (per second, {}; bars: first attempts (pale) + retries; black: succeeded{})",
            experiment.name,
            frame.bucket_words(),
            if any_trigger {
                "; red band: trigger"
            } else {
                ""
            }
        ),
        17,
    )?;
    let top = frame
        .max(|r| over_time::sent(r).max(r[Column::Succeeded as usize]))
        .max(1e-9)
        * 1.1;
    let areas = body.split_evenly((shown.len(), 2));
    for (k, ((j, e), rows)) in runs.iter().zip(&frame.rows).enumerate() {
        let Some(area) = areas.get(k) else { break };
        let color = variant_color(*j);
        let title = format!("{}: {}", super::display_name(&point.variants[*j]), e.label);
        let mut chart = over_time::panel(
            area,
            &frame,
            &PanelSpec {
                title: &title,
                color,
                top,
                y_desc: "sent (/s)",
                y_format: None,
                right: None,
                last: k + 2 >= runs.len(),
            },
        )?;
        over_time::draw_load(
            &mut chart,
            &frame,
            rows,
            windows.get(*j).map_or(&[][..], Vec::as_slice),
            top,
            color,
            (0.45, 1.0),
        )?;
    }
    Ok(csv)
}
