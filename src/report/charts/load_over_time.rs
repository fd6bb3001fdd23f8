//! Load over time, a panel per variant on one time axis and one scale (logarithmic where a few
//! tall bars would flatten the rest): first attempts and retries stacked as bars, goodput
//! (requests that succeeded) as a line, all as rates per second, and the server's queue on
//! its own axis on the right (one queue scale for every panel too). The scenario's triggers (load spikes, fault windows) are shaded in light red,
//! so a storm that outlives its trigger shows as load beyond the band. The windows come from
//! the validated scenario, so `retrystorm report DIR` draws them again from its resolved
//! scenario.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{Area, Drawn};
use super::over_time::{self, PanelSpec, Series, YAxis};
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
        let table = self.table(run).ok();
        let frame = table.as_ref().map(|t| &t.frame);
        // Hedges are stacked with the retries: both are attempts beyond a request's first.
        let all = || run.result.points.iter().flat_map(|p| &p.variants);
        let more = if all().any(|v| v.metrics.hedges > 0.0) {
            "retries and hedges"
        } else {
            "retries"
        };
        let (to, whose) = match run.has_calls() {
            true => (" to the entry service", "the entry's"),
            false => ("", "the server's"),
        };
        // The queue is drawn only where there is one (not with unlimited workers or a row).
        let queue = match frame.is_some_and(|f| f.max(|r| r[Column::QueueLen as usize]) > 0.0) {
            true => format!(" and {whose} queue (grey, right axis)"),
            false => String::new(),
        };
        let mut caption = format!(
            "What the clients sent{to} over time (pale: first attempts, dark: {more}), what succeeded (black line){queue}: a storm is where {more} outgrow first attempts while goodput falls. Every panel has one time axis, which runs to the end of the last variant's activity; each panel stops where its own variant's activity stopped."
        );
        if frame.is_some_and(|f| load_axis(f).log) {
            caption.push_str(" The rates are on a log axis: the tallest is more than 30 times the typical one, which a linear axis would flatten; a bar's dark part is the retries above its first attempts.");
        }
        if run.has_calls() {
            caption.push_str(" The services behind the entry are in service-load-over-time.");
        }
        // Requests a client rejected locally never left it, so they are not in the bars.
        if all().any(|v| v.metrics.failed.throttled_locally > 0.0) {
            caption.push_str(" Requests a client's adaptive throttle rejected never left it: they are not in the bars (`failed.throttled_locally` in summary.json counts them).");
        }
        caption
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
        let y = load_axis(frame);
        let y_desc = if y.log {
            "sent (/s, log scale)"
        } else {
            "sent (/s)"
        };
        let queue_top = queue_top.max(1.0) * 1.1;
        let areas = body.split_evenly((variants.len(), 1));
        for (line, (v, area)) in table.lines.iter().zip(variants.iter().zip(&areas)) {
            let j = line.variant;
            let color = variant_color(j);
            let title = over_time::panel_title(v);
            let spec = PanelSpec {
                right: any_queue.then_some((queue_top, "queue")),
                ..PanelSpec::new(&title, color, y, y_desc, j + 1 == variants.len())
            };
            let mut chart = over_time::panel(area, frame, &spec)?;
            let rows = &frame.rows[line.row];
            let mix = if v.is_truncated() {
                (0.25, 0.5)
            } else {
                (0.45, 1.0)
            };
            over_time::draw_load(&mut chart, frame, rows, &line.windows, &y, color, mix)?;
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

/// The load figure's y axis: over what every panel draws, attempts sent and goodput.
fn load_axis(frame: &over_time::Frame) -> YAxis {
    let rows = || frame.rows.iter().flatten();
    let goodput = rows().map(|r| r[Column::Succeeded as usize]);
    YAxis::of(rows().map(over_time::sent).chain(goodput))
}
