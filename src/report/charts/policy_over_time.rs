//! Retry budgets and circuit breakers over time, a panel per variant that has either: the
//! budgets' mean fill level as a line and the share of breakers open as a filled area, both on
//! a 0-100 % axis, with the retries sent per bucket as light grey bars on a right axis and the
//! scenario's triggers shaded in light red as in the load-over-time figure. It shows when a
//! budget drains and stops retries, when breakers open and close, and what that did to the
//! retries. Variants with neither a budget nor a breaker get no panel, and a run where no
//! variant has one gets no figure (see [`applies`]).
//!
//! How many budgets and breakers there are comes from the validated scenario of the focus
//! point (one per client, or one shared), so `retrystorm report DIR` draws the same shares.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::over_time::{self, Frame, PanelSpec, Row};
use super::style::{FONT, tick, variant_color};
use super::triggers::{self, TRIGGER};
use crate::metrics::Column;
use crate::metrics::{ExperimentResult, VariantResult};
use crate::model::{BudgetKind, Scope};
use crate::scenario::{Experiment, Scenario};

/// The retries bars: translucent black, a light grey that lets the lines show through.
const RETRIES: RGBColor = RGBColor(0, 0, 0);
const BAR_ALPHA: f64 = 0.25;

/// The top of the percent axis.
const TOP: f64 = 116.0;

/// What a legend entry's sample looks like.
#[derive(Clone, Copy)]
enum Key {
    Line,
    Threshold,
    Area,
    Bar,
    Trigger,
}

/// The legend's font size and the height of one of its rows, in pixels.
const KEY_FONT: u32 = 14;
const KEY_ROW: u32 = 22;

/// The keys in rows that fit `width` pixels, measured with the compiled-in font: (key, x)
/// per row.
fn key_rows(keys: &[(Key, String, Vec<RGBColor>)], width: u32) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut x = 24;
    for (i, (_, label, _)) in keys.iter().enumerate() {
        let w = 30 + super::text_width(label, KEY_FONT) as i32;
        if x + w + 8 > width as i32 && x > 24 {
            rows.push(Vec::new());
            x = 24;
        }
        rows.last_mut().expect("never empty").push((i, x));
        x += w + 22;
    }
    rows
}

/// Rows of samples saying what the marks mean, wrapped to the figure's width ([`key_rows`]).
/// Lines and areas are drawn in the colours of the panels that show them, a stripe per
/// variant, so a sample matches the marks it names.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    keys: &[(Key, String, Vec<RGBColor>)],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let font: TextStyle = (FONT, KEY_FONT).into();
    let (width, _) = area.dim_in_pixel();
    for (r, row) in key_rows(keys, width).iter().enumerate() {
        for &(i, x) in row {
            key(area, &keys[i], x, r as i32 * KEY_ROW as i32, &font)?;
        }
    }
    Ok(())
}

/// Draws one key of the legend at (`x`, `dy`): its sample and its label.
fn key<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (key, label, colors): &(Key, String, Vec<RGBColor>),
    x: i32,
    dy: i32,
    font: &TextStyle,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    // Each colour's share of a 24-pixel sample.
    let stripe = |k: usize| {
        let w = 24 / colors.len().clamp(1, 6) as i32;
        (k as i32 * w, (k as i32 + 1) * w)
    };
    let (y0, ym, y1) = (dy + 4, dy + 11, dy + 18);
    match key {
        Key::Line => {
            for (k, c) in colors.iter().take(6).enumerate() {
                let (a, b) = stripe(k);
                area.draw(&PathElement::new(
                    vec![(x + a, ym), (x + b, ym)],
                    c.stroke_width(3),
                ))
                .map_err(err)?;
            }
        }
        Key::Threshold => {
            for (k, c) in colors.iter().take(6).enumerate() {
                let (a, b) = stripe(k);
                area.draw(&plotters::element::DashedPathElement::new(
                    vec![(x + a, ym), (x + b, ym)],
                    5,
                    3,
                    c.mix(0.8).stroke_width(1),
                ))
                .map_err(err)?;
            }
        }
        Key::Area => {
            for (k, c) in colors.iter().take(6).enumerate() {
                let (a, b) = stripe(k);
                area.draw(&Rectangle::new(
                    [(x + a, y0), (x + b, y1)],
                    c.mix(0.35).filled(),
                ))
                .map_err(err)?;
            }
        }
        Key::Bar => area
            .draw(&Rectangle::new(
                [(x + 6, y0), (x + 16, y1)],
                RETRIES.mix(BAR_ALPHA).filled(),
            ))
            .map_err(err)?,
        Key::Trigger => area
            .draw(&Rectangle::new(
                [(x, y0), (x + 22, y1)],
                TRIGGER.mix(0.13).filled(),
            ))
            .map_err(err)?,
    }
    area.draw(&Text::new(label.clone(), (x + 30, y0), font.clone()))
        .map_err(err)?;
    Ok(())
}

/// How many retry budgets and circuit breakers a variant has (0 for none).
fn instances(s: &Scenario) -> (usize, usize) {
    let clients = s.clients.count;
    (
        s.policy
            .budget
            .as_ref()
            .map_or(0, |b| b.scope.instances(clients)),
        s.policy
            .breaker
            .as_ref()
            .map_or(0, |b| b.scope.instances(clients)),
    )
}

/// Whether a variant's budget is a token bucket, which allows retries only above half full.
fn token_bucket(s: &Scenario) -> bool {
    s.policy
        .budget
        .as_ref()
        .is_some_and(|b| matches!(b.kind, BudgetKind::TokenBucket { .. }))
}

/// The variants of the focus point that have a budget or a breaker, by position in the file.
fn panels(experiment: &Experiment) -> Vec<usize> {
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    experiment.points[focus]
        .variants
        .iter()
        .enumerate()
        .filter(|(_, v)| instances(&v.scenario) != (0, 0))
        .map(|(j, _)| j)
        .collect()
}

/// Whether the run gets this figure: some variant (at the focus point) has a retry budget or
/// a circuit breaker.
pub fn applies(experiment: &Experiment) -> bool {
    !panels(experiment).is_empty()
}

/// How many panels the figure has.
pub fn panel_count(experiment: &Experiment) -> usize {
    panels(experiment).len()
}

/// Draws the panels and returns their CSV: `variant, bucket_start_s, bucket_s, budgets,
/// budget_level_pct, breakers, breakers_open, breakers_open_pct, retries_per_s` (and
/// `trigger`), the values drawn.
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
    let scenarios = &experiment.points[focus].variants;
    // (A run read back from a folder whose summary lists fewer variants shows what it has.)
    let shown: Vec<usize> = panels(experiment)
        .into_iter()
        .filter(|&j| j < point.variants.len())
        .collect();
    // Each variant's trigger windows, in seconds (a variant's patch may change them).
    let triggers = triggers::windows(scenarios);
    let any_trigger = shown.iter().any(|&j| !triggers[j].is_empty());
    let counts: Vec<(usize, usize)> = scenarios.iter().map(|v| instances(&v.scenario)).collect();
    let any_budget = shown.iter().any(|&j| counts[j].0 > 0);
    let any_breaker = shown.iter().any(|&j| counts[j].1 > 0);
    // The same time axis as the load-over-time figure: the frame of every variant, so a panel
    // here spans what the same variant's panel spans there.
    let all: Vec<_> = point.variants.iter().collect();
    let frame = Frame::of(&all);
    let retries = |r: &Row| r[Column::Retries as usize];
    let any_retries = shown
        .iter()
        .any(|&j| frame.rows[j].iter().any(|r| retries(r) > 0.0));
    // The plotted values of a row: budget level and breakers open in %, None without one.
    let budget_pct =
        |j: usize, r: &Row| (counts[j].0 > 0).then(|| r[Column::BudgetLevel as usize] * 100.0);
    let open_pct = |j: usize, r: &Row| {
        (counts[j].1 > 0).then(|| r[Column::BreakersOpen as usize] / counts[j].1 as f64 * 100.0)
    };

    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "variant",
        "bucket_start_s",
        "bucket_s",
        "budgets",
        "budget_level_pct",
        "breakers",
        "breakers_open",
        "breakers_open_pct",
        "retries_per_s",
    ];
    if any_trigger {
        header.push("trigger");
    }
    w.write_record(&header)?;
    let text = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let count = |n: usize| if n > 0 { n.to_string() } else { String::new() };
    for &j in &shown {
        let v = &point.variants[j];
        for (i, row) in frame.rows[j].iter().enumerate() {
            let start = frame.start(i);
            let mut record = vec![
                v.name.clone(),
                start.to_string(),
                frame.bucket.to_string(),
                count(counts[j].0),
                text(budget_pct(j, row)),
                count(counts[j].1),
                text((counts[j].1 > 0).then(|| row[Column::BreakersOpen as usize])),
                text(open_pct(j, row)),
                retries(row).to_string(),
            ];
            if any_trigger {
                // 1 when the bucket overlaps a trigger window (the shaded band).
                let inside = triggers::overlaps(&triggers[j], start, start + frame.bucket);
                record.push(u8::from(inside).to_string());
            }
            w.write_record(&record)?;
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "{}: retry budgets and circuit breakers{at}",
        experiment.name
    );
    let colors = |has: &dyn Fn(usize) -> bool| -> Vec<RGBColor> {
        shown
            .iter()
            .filter(|&&j| has(j))
            .map(|&j| variant_color(j))
            .collect()
    };
    let mut keys: Vec<(Key, String, Vec<RGBColor>)> = Vec::new();
    if any_budget {
        keys.push((
            Key::Line,
            "budget level".into(),
            colors(&|j| counts[j].0 > 0),
        ));
    }
    if shown.iter().any(|&j| token_bucket(&scenarios[j].scenario)) {
        keys.push((
            Key::Threshold,
            "token bucket's retry threshold".into(),
            colors(&|j| token_bucket(&scenarios[j].scenario)),
        ));
    }
    if any_breaker {
        keys.push((
            Key::Area,
            "breakers open (share of breakers and replications)".into(),
            colors(&|j| counts[j].1 > 0),
        ));
    }
    if any_retries {
        keys.push((
            Key::Bar,
            format!(
                "retries sent per second ({}, right axis)",
                frame.bucket_words()
            ),
            Vec::new(),
        ));
    }
    if any_trigger {
        keys.push((Key::Trigger, "trigger".into(), Vec::new()));
    }
    // The title, then the legend in as many rows as its keys need.
    let (width, _) = root.dim_in_pixel();
    let rows = key_rows(&keys, width).len() as u32;
    let (head, body) = root.split_vertically(34 + rows * KEY_ROW + 4);
    let (title_area, legend_area) = head.split_vertically(34);
    super::draw_title(&title_area, &title, 17)?;
    legend(&legend_area, &keys)?;
    // One retries scale for every panel, so the bars compare across policies.
    let retries_top = shown
        .iter()
        .flat_map(|&j| &frame.rows[j])
        .map(retries)
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.1;
    let percent = |y: &f64| format!("{} %", tick(y));
    let areas = body.split_evenly((shown.len(), 1));
    for (k, (&j, area)) in shown.iter().zip(&areas).enumerate() {
        let v = &point.variants[j];
        let color = variant_color(j);
        let rows = &frame.rows[j];
        let title = panel_title(v, &scenarios[j].scenario);
        // Room above 100 %: a full budget's line is not cut by the panel's edge, and the
        // trigger label sits above it.
        let mut chart = over_time::panel(
            area,
            &frame,
            &PanelSpec {
                title: &title,
                color,
                top: TOP,
                y_desc: "",
                y_format: Some(&percent),
                right: any_retries.then_some((retries_top, "retries (/s)")),
                last: k + 1 == shown.len(),
            },
        )?;
        // The trigger bands go under the data.
        chart
            .draw_series(triggers::bands(&triggers[j], frame.x1, TOP))
            .map_err(err)?;
        // States are sampled at the end of their bucket.
        let at_end = |i: usize| frame.start(i) + frame.bucket;
        if counts[j].1 > 0 {
            let open = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some((at_end(i), open_pct(j, r)?)));
            chart
                .draw_series(
                    AreaSeries::new(open, 0.0, color.mix(0.35)).border_style(color.stroke_width(1)),
                )
                .map_err(err)?;
        }
        let end = at_end(rows.len().saturating_sub(1));
        if token_bucket(&scenarios[j].scenario) {
            // gRPC retries only while tokens > max_tokens / 2.
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, 50.0), (end, 50.0)],
                    6,
                    4,
                    color.mix(0.8).stroke_width(1),
                ))
                .map_err(err)?;
        }
        if counts[j].0 > 0 {
            let level = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some((at_end(i), budget_pct(j, r)?)));
            chart
                .draw_series(LineSeries::new(level, color.stroke_width(3)))
                .map_err(err)?;
        }
        // The retries go on top, translucent, so that none hides behind a budget's drop.
        if any_retries {
            chart
                .draw_secondary_series(over_time::bars(
                    &frame,
                    rows,
                    |_| 0.0,
                    retries,
                    RETRIES.mix(BAR_ALPHA).filled(),
                ))
                .map_err(err)?;
        }
    }
    Ok(csv)
}

/// A panel's title: the variant's name and its budgets and breakers, and for a variant whose
/// replications split between recovering and staying collapsed, the same warning as the
/// load-over-time figure gives (the panel is their mean, which looks like no single run).
fn panel_title(v: &VariantResult, s: &Scenario) -> String {
    let clients = s.clients.count;
    let what = |scope: Option<Scope>, one: &str| {
        scope.map(|scope| match scope {
            Scope::Shared => format!("one shared {one}"),
            Scope::PerClient if clients == 1 => format!("one {one}"),
            Scope::PerClient => format!("{clients} {one}s, one per client"),
        })
    };
    let policy: Vec<String> = [
        what(s.policy.budget.as_ref().map(|b| b.scope), "budget"),
        what(s.policy.breaker.as_ref().map(|b| b.scope), "breaker"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut title = format!("{}: {}", super::display_name(v), policy.join(", "));
    if let Some(note) = triggers::split_note(v) {
        title.push_str(&format!(" ({note})"));
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key ends inside the figure and no two keys of a row touch: the five keys of a
    /// figure with budgets, breakers, retries and triggers need two rows at 1,000 pixels,
    /// where one row cut the last label off at the edge.
    #[test]
    fn legend_keys_wrap_inside_the_figure() {
        let keys: Vec<(Key, String, Vec<RGBColor>)> = [
            (Key::Line, "budget level"),
            (Key::Threshold, "token bucket's retry threshold"),
            (
                Key::Area,
                "breakers open (share of breakers and replications)",
            ),
            (
                Key::Bar,
                "retries sent per second (200 ms buckets, right axis)",
            ),
            (Key::Trigger, "trigger"),
        ]
        .into_iter()
        .map(|(k, l)| (k, l.to_string(), Vec::new()))
        .collect();
        for width in [1000, 600, 300] {
            let rows = key_rows(&keys, width);
            assert_eq!(rows.iter().map(Vec::len).sum::<usize>(), keys.len());
            for row in &rows {
                let mut right = 0;
                for &(i, x) in row {
                    assert!(x > right, "{width}: key {i} touches the one before");
                    right = x + 30 + super::super::text_width(&keys[i].1, KEY_FONT) as i32;
                    let alone = row.len() == 1;
                    assert!(
                        alone || right <= width as i32,
                        "{width}: key {i} ends at {right}"
                    );
                }
            }
            if width == 1000 {
                assert_eq!(rows.len(), 2);
            }
        }
    }
}
