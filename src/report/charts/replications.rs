//! Single runs of a bimodal variant: when a variant's replications split between recovering
//! and staying collapsed, its mean over replications looks like no run at all. This figure
//! shows, per such variant, a typical recovered and a typical collapsed replication side by
//! side (the median total goodput within each group, see [`crate::runner::examples`]): what
//! the clients sent (pale: first attempts, dark: retries) and what succeeded (black line),
//! per second, on the time axis and scale every panel shares.
//!
//! The rows come from [`VariantResult::examples`], which only a run fills in; the CSV holds
//! exactly what is drawn, so `retrystorm report DIR` can draw it again from there.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::Area;
use super::over_time::{self, Frame, Line, PanelSpec, Row, Series};
use super::style::variant_color;
use super::{Chart, Run};
use crate::metrics::Column;
use crate::metrics::{ExampleRun, VariantResult};

/// Height of one variant's row of panels, in pixels.
const ROW_HEIGHT: u32 = 230;

/// The replications figure.
pub struct Replications;

/// The variants of the focus point that have example runs, by position in the file.
fn shown(variants: &[VariantResult]) -> Vec<usize> {
    variants
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.examples.is_empty())
        .map(|(j, _)| j)
        .collect()
}

impl Chart for Replications {
    type Table = Series;

    fn stem(&self) -> &'static str {
        "replications"
    }

    fn applies(&self, run: &Run) -> bool {
        let point = run.result.points.get(run.focus());
        point.is_some_and(|p| !shown(&p.variants).is_empty())
    }

    fn caption(&self, _run: &Run) -> String {
        "Where a variant's replications split between recovering and staying collapsed, the mean describes no run: a typical recovered and a typical collapsed replication (median goodput within each group), on one time axis and scale.".to_string()
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(shown(&run.point().variants).len(), ROW_HEIGHT, 48)
    }

    /// `variant, replication, run, bucket_start_s, bucket_s, first_attempts_per_s,
    /// retries_per_s, succeeded_per_s` (and `trigger`).
    fn table(&self, run: &Run) -> Result<Series> {
        let variants = &run.point().variants;
        let windows = run.windows();
        // Every example of every shown variant, in order.
        let runs: Vec<(usize, &ExampleRun)> = shown(variants)
            .into_iter()
            .flat_map(|j| variants[j].examples.iter().map(move |e| (j, e)))
            .collect();
        let series: Vec<(&[Row], f64)> = runs
            .iter()
            .map(|(_, e)| (e.series.as_slice(), e.bucket.as_secs_f64()))
            .collect();
        let lines = runs.iter().enumerate().map(|(k, (j, e))| Line {
            row: k,
            variant: *j,
            key: vec![
                variants[*j].name.clone(),
                e.replication.to_string(),
                e.label.clone(),
            ],
            windows: windows.get(*j).cloned().unwrap_or_default(),
        });
        let lines: Vec<Line> = lines.collect();
        let columns = [Column::FirstAttempts, Column::Retries, Column::Succeeded];
        let (columns, cells) = over_time::values(&columns);
        Ok(Series {
            frame: Frame::new(&series),
            keys: vec!["variant", "replication", "run"],
            trigger: lines.iter().any(|l| !l.windows.is_empty()),
            lines,
            columns,
            cells,
        })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        let frame = &table.frame;
        let title = format!(
            "{}: single runs where the replications split{} (per second, {}; bars: first attempts (pale) + retries; black: succeeded",
            run.name(),
            run.at(),
            frame.bucket_words(),
        );
        let body = over_time::titled(root, title, table.trigger, 17)?;
        let sent = |r: &Row| over_time::sent(r).max(r[Column::Succeeded as usize]);
        let y = over_time::YAxis::linear(frame.max(sent).max(1e-9) * 1.1);
        let areas = body.split_evenly((shown(variants).len(), 2));
        let n = table.lines.len();
        for (k, (line, area)) in table.lines.iter().zip(&areas).enumerate() {
            let j = line.variant;
            let color = variant_color(j);
            let title = format!("{}: {}", super::display_name(&variants[j]), line.key[2]);
            let spec = PanelSpec::new(&title, color, y, "sent (/s)", k + 2 >= n);
            let mut chart = over_time::panel(area, frame, &spec)?;
            let rows = &frame.rows[line.row];
            over_time::draw_load(
                &mut chart,
                frame,
                rows,
                &line.windows,
                &y,
                color,
                (0.45, 1.0),
            )?;
        }
        Ok(())
    }
}
