//! A time-series column over time as a rate, one panel per variant on one time axis and one
//! y scale: the retry-storm picture (retries pile up on a few instants without jitter and
//! spread with it), or when attempts reached the server. Trigger windows are shaded and a
//! variant whose replications split carries the same note as in the load-over-time figure.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{Area, Drawn};
use super::over_time::{self, PanelSpec, Series};
use super::style::variant_color;
use super::{Chart, Run, triggers};
use crate::metrics::Column;

/// A time histogram figure: one column over time.
pub struct TimeHistogram {
    stem: &'static str,
    column: Column,
    /// What the column counts, for the axis.
    label: &'static str,
    caption: &'static str,
    /// Whether only a run with some of the column gets the figure.
    only_if_any: bool,
}

/// When retries were sent; only runs that sent any get it.
pub const RETRIES: TimeHistogram = TimeHistogram {
    stem: "retries-over-time",
    column: Column::Retries,
    label: "retries sent",
    caption: "When retries were sent: without jitter they pile up on a few instants; with jitter they spread.",
    only_if_any: true,
};

/// When attempts reached the server.
pub const ATTEMPTS: TimeHistogram = TimeHistogram {
    stem: "attempts-over-time",
    column: Column::Attempts,
    label: "attempts at the server",
    caption: "When attempts reached the server (for the occ server, when writes happened).",
    only_if_any: false,
};

impl Chart for TimeHistogram {
    type Table = Series;

    fn stem(&self) -> &'static str {
        self.stem
    }

    fn applies(&self, run: &Run) -> bool {
        let col = self.column as usize;
        !self.only_if_any
            || (run.result.points.iter().flat_map(|p| &p.variants))
                .any(|v| v.series.iter().any(|r| r[col] > 0.0))
    }

    fn caption(&self, _run: &Run) -> String {
        self.caption.to_string()
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(run.variants().len(), 150, 66)
    }

    fn table(&self, run: &Run) -> Result<Series> {
        Ok(Series::of_variants(run, &[self.column]))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let (label, col) = (self.label, self.column as usize);
        let variants = &run.point().variants;
        let frame = &table.frame;
        let title = format!(
            "{}: {label} per second{} ({}{}",
            run.name(),
            run.at(),
            frame.bucket_words(),
            run.mean_of(),
        );
        let body = over_time::titled(root, title, table.trigger, 19)?;
        // One y scale for every panel.
        let top = frame.max(|r| r[col]).max(1e-9) * 1.1;
        // The first word of the label ("retries", "attempts") and the unit.
        let y_desc = format!("{} (/s)", label.split(' ').next().unwrap_or(label));
        let areas = body.split_evenly((variants.len(), 1));
        for (line, (v, area)) in table.lines.iter().zip(variants.iter().zip(&areas)) {
            let j = line.variant;
            let color = variant_color(j);
            let title = over_time::panel_title(v);
            let spec = PanelSpec::new(&title, color, top, &y_desc, j + 1 == variants.len());
            let mut chart = over_time::panel(area, frame, &spec)?;
            chart
                .draw_series(triggers::bands(&line.windows, frame.x1, top))
                .drawn()?;
            let style = if v.is_truncated() {
                color.mix(0.45).filled()
            } else {
                color.filled()
            };
            let rows = &frame.rows[line.row];
            chart
                .draw_series(over_time::bars(frame, rows, |_| 0.0, |r| r[col], style))
                .drawn()?;
        }
        Ok(())
    }
}
