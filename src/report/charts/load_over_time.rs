//! Load over time, a panel per variant on one time axis and one scale: first attempts and
//! retries stacked as bars, goodput (requests that succeeded) as a line, all as rates per
//! second, and the server's queue on its own axis on the right (one queue scale for every
//! panel too). The scenario's triggers (load spikes, fault windows) are shaded in light red,
//! so a storm that outlives its trigger shows as load beyond the band. The windows come from
//! the validated scenario, so `retrystorm report DIR` draws them again from its resolved
//! scenario.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{Area, Drawn};
use super::over_time::{self, PanelSpec, Series};
use super::style::variant_color;
use super::{Chart, Run};
use crate::metrics::Column;

/// The load-over-time figure.
pub struct LoadOverTime;

impl Chart for LoadOverTime {
    type Table = Series;

    fn stem(&self) -> &'static str {
        "load-over-time"
    }

    fn caption(&self, run: &Run) -> String {
        // Hedges are stacked with the retries: both are attempts beyond a request's first.
        let all = || run.result.points.iter().flat_map(|p| &p.variants);
        let hedged = all().any(|v| v.metrics.hedges > 0.0);
        let caption = match (run.has_calls(), hedged) {
            (true, false) => {
                "What the clients sent to the entry service over time (pale: first attempts, dark: retries), what succeeded (black line) and the entry's queue (grey, right axis): a storm is where retries outgrow first attempts while goodput falls. The services behind the entry are in service-load-over-time."
            }
            (true, true) => {
                "What the clients sent to the entry service over time (pale: first attempts, dark: retries and hedges), what succeeded (black line) and the entry's queue (grey, right axis): a storm is where retries and hedges outgrow first attempts while goodput falls. The services behind the entry are in service-load-over-time."
            }
            (false, false) => {
                "What the clients sent over time (pale: first attempts, dark: retries), what succeeded (black line) and the server's queue (grey, right axis): a storm is where retries outgrow first attempts while goodput falls."
            }
            (false, true) => {
                "What the clients sent over time (pale: first attempts, dark: retries and hedges), what succeeded (black line) and the server's queue (grey, right axis): a storm is where retries and hedges outgrow first attempts while goodput falls."
            }
        };
        // Requests a client rejected locally never left it, so they are not in the bars.
        if all().any(|v| v.metrics.failed.throttled_locally > 0.0) {
            format!(
                "{caption} Requests a client's adaptive throttle rejected never left it: they are not in the bars (`failed.throttled_locally` in summary.json counts them)."
            )
        } else {
            caption.to_string()
        }
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(run.variants().len(), 150, 66)
    }

    fn table(&self, run: &Run) -> Result<Series> {
        let columns = [
            Column::FirstAttempts,
            Column::Retries,
            Column::Succeeded,
            Column::QueueLen,
        ];
        Ok(Series::of_variants(run, &columns))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        let frame = &table.frame;
        // The queue gets its axis only when there is one (not with unlimited workers or a row).
        let queue_top = frame.max(|r| r[Column::QueueLen as usize]);
        let any_queue = queue_top > 0.0;
        let sent = match (
            variants.iter().any(|v| v.metrics.hedges > 0.0),
            variants
                .iter()
                .any(|v| v.metrics.failed.throttled_locally > 0.0),
        ) {
            (false, false) => "retries",
            (true, false) => "retries and hedges",
            (false, true) => "retries that left the clients",
            (true, true) => "retries and hedges that left the clients",
        };
        let title = format!(
            "{}: load per second{} ({}; bars: first attempts (pale) + {sent}; black: succeeded{}",
            run.name(),
            run.at(),
            frame.bucket_words(),
            if any_queue { "; grey: queue" } else { "" },
        );
        let body = over_time::titled(root, title, table.trigger, 17)?;
        // One scale for every panel, and one for every queue.
        let top = frame
            .max(|r| over_time::sent(r).max(r[Column::Succeeded as usize]))
            .max(1e-9)
            * 1.1;
        let queue_top = queue_top.max(1.0) * 1.1;
        let areas = body.split_evenly((variants.len(), 1));
        for (line, (v, area)) in table.lines.iter().zip(variants.iter().zip(&areas)) {
            let j = line.variant;
            let color = variant_color(j);
            let title = over_time::panel_title(v);
            let spec = PanelSpec {
                right: any_queue.then_some((queue_top, "queue")),
                ..PanelSpec::new(&title, color, top, "sent (/s)", j + 1 == variants.len())
            };
            let mut chart = over_time::panel(area, frame, &spec)?;
            let rows = &frame.rows[line.row];
            let mix = if v.is_truncated() {
                (0.25, 0.5)
            } else {
                (0.45, 1.0)
            };
            over_time::draw_load(&mut chart, frame, rows, &line.windows, top, color, mix)?;
            if any_queue {
                // States are sampled at the end of their bucket.
                let queue = rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (frame.start(i) + frame.bucket, r[Column::QueueLen as usize]));
                let grey = super::style::QUEUE_LIGHT.stroke_width(1);
                chart
                    .draw_secondary_series(LineSeries::new(queue, grey))
                    .drawn()?;
            }
        }
        Ok(())
    }
}
