//! The server over time, a row per variant on one time axis: on the left the workers busy
//! (attempts in service, filled) and the queue (grey line, right axis); on the right how
//! attempts ended, per second, stacked by outcome (success, error, rejected, throttled,
//! timeout, conflict, permanent). Every left panel shares one scale for workers and one for
//! the queue, every right panel one rate scale, so a server that saturates or sheds load
//! stands out at a glance. Trigger windows are shaded as in the other over-time figures. An
//! `occ` row has neither workers nor a queue: its figure is the outcome panels alone.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::over_time::{self, Frame, PanelSpec, Row};
use super::style::variant_color;
use super::triggers;
use crate::metrics::Column;
use crate::metrics::ExperimentResult;
use crate::scenario::Experiment;

/// The outcome columns, bottom to top, with their colour (the same in every panel).
const OUTCOMES: [(Column, &str, RGBColor); 7] = [
    (Column::AttemptSuccess, "success", RGBColor(44, 160, 44)),
    (Column::AttemptError, "error", RGBColor(214, 39, 40)),
    (Column::AttemptRejected, "rejected", RGBColor(255, 127, 14)),
    (
        Column::AttemptThrottled,
        "throttled",
        RGBColor(148, 103, 189),
    ),
    (Column::AttemptTimeout, "timeout", RGBColor(127, 127, 127)),
    (Column::AttemptConflict, "conflict", RGBColor(227, 119, 194)),
    (Column::AttemptPermanent, "permanent", RGBColor(60, 60, 60)),
];

/// The queue line's colour.
const QUEUE: RGBColor = RGBColor(110, 110, 110);

/// Whether the run gets this figure: some variant at the focus point had an attempt in
/// service, waiting or answered.
pub fn applies(result: &ExperimentResult, focus: usize) -> bool {
    result.points.get(focus).is_some_and(|p| {
        p.variants.iter().any(|v| {
            v.series.iter().any(|r| {
                r[Column::InService as usize] > 0.0
                    || r[Column::QueueLen as usize] > 0.0
                    || OUTCOMES.iter().any(|(c, ..)| r[*c as usize] > 0.0)
            })
        })
    })
}

/// Whether the server (the entry service) of the run has workers and a queue to draw: not
/// an `occ` row.
pub fn has_workers(experiment: &Experiment) -> bool {
    experiment.points.iter().flat_map(|p| &p.variants).any(|v| {
        !matches!(
            v.scenario.services[0].server.kind,
            crate::scenario::ServerKind::Occ
        )
    })
}

/// Draws the panels and returns their CSV: `variant, bucket_start_s, bucket_s, in_service,
/// queue_len`, then `attempt_<outcome>_per_s` for each outcome that occurred (and `trigger`).
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
    let variants: Vec<_> = point.variants.iter().collect();
    let frame = Frame::of(&variants);
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let outcomes: Vec<(Column, &str, RGBColor)> = OUTCOMES
        .iter()
        .copied()
        .filter(|(c, ..)| frame.max(|r| r[*c as usize]) > 0.0)
        .collect();
    let mut header = vec!["in_service".to_string(), "queue_len".to_string()];
    header.extend(outcomes.iter().map(|(c, ..)| format!("{}_per_s", c.name())));
    let csv = over_time::write_csv(&frame, &names, &header, &windows, |_, r| {
        let mut values = vec![
            r[Column::InService as usize].to_string(),
            r[Column::QueueLen as usize].to_string(),
        ];
        values.extend(outcomes.iter().map(|(c, ..)| r[*c as usize].to_string()));
        values
    })?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(48);
    let workers = has_workers(experiment);
    let title = if workers {
        format!(
            "{}: the server over time{at} (left: workers busy, grey line: queue; right: attempts ended per second by outcome, {})",
            experiment.name,
            frame.bucket_words()
        )
    } else {
        format!(
            "{}: the row over time{at} (writes ended per second by outcome, {})",
            experiment.name,
            frame.bucket_words()
        )
    };
    super::draw_title(&title_area, &title, 17)?;
    let keys: Vec<super::Key> = outcomes
        .iter()
        .map(|(_, label, color)| super::Key {
            label: label.to_string(),
            color: *color,
            mark: super::Mark::Swatch,
        })
        .collect();
    let (legend_area, body) = body.split_vertically(super::legend_height(&keys, super::SIZE.0));
    super::draw_legend(&legend_area, &keys)?;

    let total = |r: &Row| outcomes.iter().map(|(c, ..)| r[*c as usize]).sum::<f64>();
    let rate_top = frame.max(total).max(1e-9) * 1.1;
    let n = variants.len();
    let columns = if workers { 2 } else { 1 };
    let rows = body.split_evenly((n, columns));
    for (j, v) in variants.iter().enumerate() {
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
        let data = &frame.rows[j];
        let bands = windows.get(j).map_or(&[][..], Vec::as_slice);
        if workers {
            draw_workers(&rows[2 * j], &frame, data, bands, (&title, color, last))?;
        }
        let right_title = if workers {
            format!("{}: attempts ended", v.name)
        } else {
            title
        };
        let mut right = over_time::panel(
            &rows[columns * j + columns - 1],
            &frame,
            &PanelSpec {
                title: &right_title,
                color,
                top: rate_top,
                y_desc: if workers {
                    "attempts (/s)"
                } else {
                    "writes (/s)"
                },
                y_format: None,
                right: None,
                last,
            },
        )?;
        right
            .draw_series(triggers::bands(bands, frame.x1, rate_top))
            .map_err(err)?;
        for (k, (c, _, fill)) in outcomes.iter().enumerate() {
            let below = |r: &Row| {
                outcomes[..k]
                    .iter()
                    .map(|(c, ..)| r[*c as usize])
                    .sum::<f64>()
            };
            let col = *c as usize;
            right
                .draw_series(over_time::bars(
                    &frame,
                    data,
                    below,
                    move |r| below(r) + r[col],
                    fill.filled(),
                ))
                .map_err(err)?;
        }
    }
    Ok(csv)
}

/// The left panel of a variant: workers busy (filled) and the queue (grey line, right axis),
/// each on the scale every variant's panel shares.
fn draw_workers<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    frame: &Frame,
    data: &[Row],
    bands: &[(f64, f64)],
    (title, color, last): (&str, RGBColor, bool),
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    let busy_top = frame.max(|r| r[Column::InService as usize]).max(1.0) * 1.1;
    let queue_top = frame.max(|r| r[Column::QueueLen as usize]);
    let any_queue = queue_top > 0.0;
    let queue_top = queue_top.max(1.0) * 1.1;
    let mut left = over_time::panel(
        area,
        frame,
        &PanelSpec {
            title,
            color,
            top: busy_top,
            y_desc: "workers busy",
            y_format: None,
            right: any_queue.then_some((queue_top, "queue")),
            last,
        },
    )?;
    left.draw_series(triggers::bands(bands, frame.x1, busy_top))
        .map_err(err)?;
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
    .map_err(err)?;
    if any_queue {
        let queue = data
            .iter()
            .enumerate()
            .map(|(i, r)| (frame.start(i) + frame.bucket, r[Column::QueueLen as usize]));
        left.draw_secondary_series(LineSeries::new(queue, QUEUE.stroke_width(2)))
            .map_err(err)?;
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
}
