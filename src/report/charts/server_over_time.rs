//! The server over time, a row per variant on one time axis: on the left the workers busy
//! (attempts in service, filled) and the queue (grey line, right axis); on the right how
//! attempts ended, per second, stacked by outcome (success, error, rejected, throttled,
//! timeout, conflict, permanent). Every left panel shares one scale for workers and one for
//! the queue, every right panel one rate scale, so a server that saturates or sheds load
//! stands out at a glance. Trigger windows are shaded as in the other over-time figures. An
//! `occ` row has neither workers nor a queue: its figure is the outcome panels alone.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn, Key, Mark};
use super::over_time::{self, Frame, PanelSpec, Row, Series, YAxis};
use super::style::{self, variant_color};
use super::{Chart, Run, triggers};
use crate::metrics::Column;

/// The outcome columns, bottom to top, with their colour (the same in every panel).
const OUTCOMES: [(Column, &str, RGBColor); 9] = [
    (Column::AttemptSuccess, "success", style::SUCCESS),
    (
        Column::AttemptDegraded,
        "degraded (fallback)",
        style::DEGRADED,
    ),
    (Column::AttemptError, "error", style::ERROR),
    (Column::AttemptRejected, "rejected", style::REJECTED),
    (Column::AttemptThrottled, "throttled", style::THROTTLED),
    (Column::AttemptTimeout, "timeout", style::TIMEOUT),
    (Column::AttemptConflict, "conflict", style::CONFLICT),
    (Column::AttemptPermanent, "permanent", style::PERMANENT),
    (
        Column::AttemptBulkheadFull,
        "bulkhead full",
        style::BULKHEAD,
    ),
];

/// The queue line's colour.
const QUEUE: RGBColor = style::QUEUE;

/// The server-over-time figure.
pub struct ServerOverTime;

/// The outcomes that occurred in the frame, bottom to top.
fn outcomes(frame: &Frame) -> Vec<(Column, &'static str, RGBColor)> {
    let occurred = |c: Column| frame.max(|r| r[c as usize]) > 0.0;
    OUTCOMES
        .into_iter()
        .filter(|(c, ..)| occurred(*c))
        .collect()
}

/// What the left column of the figure can show.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Left {
    /// Workers busy and the queue.
    Workers,
    /// Nothing: the entry is an `occ` row, which has no workers and no queue.
    Occ,
    /// Nothing: no worker was ever busy and nothing queued at the focus point (a service
    /// time of 0, as brooker-2022's server has), so the column would be flat at 0.
    Idle,
}

/// What the left column of `run`'s figure can show.
fn left(run: &Run) -> Left {
    let occ = run.experiment.points.get(run.focus()).is_some_and(|p| {
        p.variants.iter().all(|v| {
            matches!(
                v.scenario.services[0].server.kind,
                crate::scenario::ServerKind::Occ
            )
        })
    });
    if occ {
        return Left::Occ;
    }
    let variants = &run.point().variants;
    let busy = variants
        .iter()
        .flat_map(|v| &v.series)
        .any(|r| r[Column::InService as usize] > 0.0 || r[Column::QueueLen as usize] > 0.0);
    if busy { Left::Workers } else { Left::Idle }
}

/// What the figure shows for `run`, as its caption says it.
fn what(run: &Run) -> String {
    let alone = "how attempts ended per second, by outcome, a panel per variant on one time axis and one scale";
    match (left(run), run.has_calls()) {
        (Left::Workers, true) => "The entry service over time: workers busy (including those waiting on the entry's own calls) and the queue (left), and how the clients' attempts ended per second, by outcome (right), on one time axis and one scale per column.".to_string(),
        (Left::Workers, false) => "The server over time: workers busy and the queue (left), and how attempts ended per second, by outcome (right), on one time axis and one scale per column.".to_string(),
        (Left::Occ, _) => "The row over time: how the writes ended per second, by outcome, a panel per variant on one time axis and one scale (an occ row has no workers and no queue to draw).".to_string(),
        (Left::Idle, _) => format!("The server over time: {alone} (no worker was ever busy and nothing queued, as with a service time of 0, so there are no workers or queue to draw)."),
    }
}

impl Chart for ServerOverTime {
    type Table = Series;

    fn stem(&self) -> &'static str {
        "server-over-time"
    }

    /// Some variant at the focus point had an attempt in service, waiting or answered.
    fn applies(&self, run: &Run) -> bool {
        run.result.points.get(run.focus()).is_some_and(|p| {
            p.variants.iter().any(|v| {
                v.series.iter().any(|r| {
                    r[Column::InService as usize] > 0.0
                        || r[Column::QueueLen as usize] > 0.0
                        || OUTCOMES.iter().any(|(c, ..)| r[*c as usize] > 0.0)
                })
            })
        })
    }

    fn caption(&self, run: &Run) -> String {
        let mut caption = what(run);
        let shed = |sc: &crate::scenario::Scenario| {
            crate::report::produces(&crate::metrics::Metric::SHED, sc)
        };
        if run.experiment.scenarios().any(shed) {
            caption.push_str(" An attempt the server shed is answered as rejected, so it counts among the rejected attempts here.");
        }
        caption
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(run.variants().len(), 160, 100)
    }

    /// `variant, bucket_start_s, bucket_s, in_service, queue_len`, then
    /// `attempt_<outcome>_per_s` for each outcome that occurred (and `trigger`).
    fn table(&self, run: &Run) -> Result<Series> {
        let frame = Frame::of(&run.point().variants.iter().collect::<Vec<_>>());
        let mut columns = vec![Column::InService, Column::QueueLen];
        columns.extend(outcomes(&frame).into_iter().map(|o| o.0));
        Ok(Series::of_variants(run, &columns))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        let frame = &table.frame;
        let left = left(run);
        let workers = left == Left::Workers;
        let (name, at, bucket) = (run.name(), run.at(), frame.bucket_words());
        let title = match left {
            Left::Workers => format!(
                "{name}: the server over time{at} (left: workers busy, grey line: queue; right: attempts ended per second by outcome, {bucket})"
            ),
            Left::Occ => format!(
                "{name}: the row over time{at} (writes ended per second by outcome, {bucket})"
            ),
            Left::Idle => format!(
                "{name}: the server over time{at} (attempts ended per second by outcome, {bucket}; no worker was ever busy)"
            ),
        };
        let body = canvas::titled(root, &title, 48, 17)?;
        let outcomes = outcomes(frame);
        let keys: Vec<Key> = outcomes
            .iter()
            .map(|(_, label, color)| Key {
                label: label.to_string(),
                color: *color,
                mark: Mark::Swatch,
            })
            .collect();
        let body = canvas::legend(&body, &keys)?;
        let n = variants.len();
        let columns = if workers { 2 } else { 1 };
        let rows = body.split_evenly((n, columns));
        for (line, v) in table.lines.iter().zip(variants) {
            let j = line.variant;
            let color = variant_color(j);
            let last = j + 1 == n;
            // Half-width panels: the split note in short.
            let title = match triggers::split_counts(v) {
                Some((up, down)) => format!(
                    "{} (mean of {up:.0} recovered, {down:.0} collapsed runs)",
                    super::display_name(v)
                ),
                None => super::display_name(v),
            };
            let data = &frame.rows[line.row];
            let bands = &line.windows[..];
            let right_title = if workers {
                draw_workers(&rows[2 * j], frame, data, bands, (&title, color, last))?;
                format!("{}: attempts ended", v.name)
            } else {
                title
            };
            let y_desc = if left == Left::Occ {
                "writes (/s)"
            } else {
                "attempts (/s)"
            };
            let spec = PanelSpec::new(&right_title, color, YAxis::linear(0.0), y_desc, last);
            let area = &rows[columns * j + columns - 1];
            draw_outcomes(area, frame, data, bands, &outcomes, spec)?;
        }
        Ok(())
    }
}

/// The right panel of a variant: its attempts ended per second, stacked by outcome, on the
/// rate scale every variant's panel shares.
fn draw_outcomes<DB: DrawingBackend>(
    area: &Area<DB>,
    frame: &Frame,
    data: &[Row],
    bands: &[(f64, f64)],
    outcomes: &[(Column, &str, RGBColor)],
    mut spec: PanelSpec,
) -> Result<()> {
    let total = |r: &Row| outcomes.iter().map(|(c, ..)| r[*c as usize]).sum::<f64>();
    spec.y = YAxis::linear(frame.max(total).max(1e-9) * 1.1);
    let mut chart = over_time::panel(area, frame, &spec)?;
    chart
        .draw_series(triggers::bands(bands, frame.x1, (0.0, spec.y.hi)))
        .drawn()?;
    for (k, (c, _, fill)) in outcomes.iter().enumerate() {
        let below = |r: &Row| {
            outcomes[..k]
                .iter()
                .map(|(c, ..)| r[*c as usize])
                .sum::<f64>()
        };
        let col = *c as usize;
        chart
            .draw_series(over_time::bars(
                frame,
                data,
                below,
                move |r| below(r) + r[col],
                fill.filled(),
            ))
            .drawn()?;
    }
    Ok(())
}

/// The left panel of a variant: workers busy (filled) and the queue (grey line, right axis),
/// each on the scale every variant's panel shares.
fn draw_workers<DB: DrawingBackend>(
    area: &Area<DB>,
    frame: &Frame,
    data: &[Row],
    bands: &[(f64, f64)],
    (title, color, last): (&str, RGBColor, bool),
) -> Result<()> {
    let busy_top = frame.max(|r| r[Column::InService as usize]).max(1.0) * 1.1;
    let queue_top = frame.max(|r| r[Column::QueueLen as usize]);
    let any_queue = queue_top > 0.0;
    let queue_top = queue_top.max(1.0) * 1.1;
    let spec = PanelSpec {
        right: any_queue.then_some((queue_top, "queue")),
        ..PanelSpec::new(title, color, YAxis::linear(busy_top), "workers busy", last)
    };
    let mut left = over_time::panel(area, frame, &spec)?;
    left.draw_series(triggers::bands(bands, frame.x1, (0.0, busy_top)))
        .drawn()?;
    // States are sampled at the end of their bucket: a step from there.
    let busy: Vec<(f64, f64)> = data
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            let y = r[Column::InService as usize];
            [(frame.start(i), y), (frame.start(i) + frame.bucket, y)]
        })
        .collect();
    left.draw_series(
        AreaSeries::new(busy, 0.0, color.mix(0.35)).border_style(color.stroke_width(1)),
    )
    .drawn()?;
    if any_queue {
        let queue = data
            .iter()
            .enumerate()
            .map(|(i, r)| (frame.start(i) + frame.bucket, r[Column::QueueLen as usize]));
        left.draw_secondary_series(LineSeries::new(queue, QUEUE.stroke_width(2)))
            .drawn()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::report::ImageFormat;
    use crate::scenario::{LoadOptions, load_str};

    /// The text of the server figure of `scenario` (a bundled file, 2 replications), drawn
    /// as SVG, and its caption.
    fn server_figure(file: &str) -> (String, String) {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(file),
        )
        .unwrap();
        let options = LoadOptions {
            replications: Some(2),
            sweep: Some(crate::scenario::Sweep::new(
                "clients.count",
                vec![20.into()],
            )),
            ..LoadOptions::default()
        };
        let experiment = load_str(&text, file, &options).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let figures =
            crate::report::charts::figures(&experiment, &result, ImageFormat::Svg, 1).unwrap();
        let figure = figures
            .into_iter()
            .find(|f| f.stem == "server-over-time")
            .expect("a server figure");
        (String::from_utf8(figure.image).unwrap(), figure.caption)
    }

    /// An `occ` row has no workers and no queue: its figure draws the writes' outcomes alone,
    /// not a column of empty "workers busy" panels; a queue server keeps both columns.
    #[test]
    fn an_occ_row_gets_no_empty_workers_panels() {
        let (svg, caption) = server_figure("aws-backoff-jitter.json");
        assert!(!svg.contains("workers busy"), "an occ row has no workers");
        assert!(svg.contains("writes (/s)"));
        assert!(caption.contains("no workers"), "{caption}");
        let (svg, caption) = server_figure("thundering-herd.json");
        assert!(svg.contains("workers busy"));
        assert!(svg.contains("attempts (/s)"));
        assert!(caption.contains("workers busy"), "{caption}");
    }

    /// brooker-2022's server answers at once: a column of "workers busy" panels flat at 0
    /// said nothing; the figure draws the outcomes alone and says why.
    #[test]
    fn a_server_that_is_never_busy_gets_no_flat_workers_panels() {
        let (svg, caption) = server_figure("brooker-2022.json");
        assert!(!svg.contains("workers busy"), "no worker was busy");
        assert!(svg.contains("attempts (/s)"));
        assert!(caption.contains("no worker was ever busy"), "{caption}");
    }
}
