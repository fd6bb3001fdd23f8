//! Retry budgets and circuit breakers over time, a panel per variant that has either: the
//! budgets' mean fill level as a line and the share of breakers open as a filled area, both on
//! a 0-100 % axis, with the retries sent per bucket as light grey bars on a right axis and the
//! scenario's triggers shaded in light red as in the load-over-time figure. It shows when a
//! budget drains and stops retries, when breakers open and close, and what that did to the
//! retries. Variants with neither a budget nor a breaker get no panel, and a run where no
//! variant has one gets no figure.
//!
//! How many budgets and breakers there are comes from the validated scenario of the focus
//! point (one per client, or one shared), so `retrystorm report DIR` draws the same shares.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn};
use super::over_time::{self, Frame, Line, PanelSpec, Row, Series, YAxis};
use super::style::{FONT, tick, variant_color};
use super::triggers::{self, TRIGGER};
use super::{Chart, Run};
use crate::metrics::Column;
use crate::metrics::VariantResult;
use crate::model::{BudgetKind, Scope};
use crate::scenario::Scenario;

/// The retries bars: translucent black, a light grey that lets the lines show through.
const RETRIES: RGBColor = super::style::INK;
const BAR_ALPHA: f64 = 0.25;
/// How strongly the share of breakers open is filled: pale, under a border in the variant's
/// colour, so a brown or grey variant's fill is not read as the grey retry bars.
const OPEN_ALPHA: f64 = 0.15;

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

/// The keys in rows that fit `width` pixels ([`canvas::legend_rows`]): (key, x) per row.
fn key_rows(keys: &[(Key, String, Vec<RGBColor>)], width: u32) -> Vec<Vec<(usize, i32)>> {
    canvas::legend_rows(keys.iter().map(|k| k.1.as_str()), width, KEY_FONT)
}

/// Rows of samples saying what the marks mean, wrapped to the figure's width ([`key_rows`]).
/// Lines and areas are drawn in the colours of the panels that show them, a stripe per
/// variant, so a sample matches the marks it names.
fn legend<DB: DrawingBackend>(
    area: &Area<DB>,
    keys: &[(Key, String, Vec<RGBColor>)],
) -> Result<()> {
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
    area: &Area<DB>,
    (key, label, colors): &(Key, String, Vec<RGBColor>),
    x: i32,
    dy: i32,
    font: &TextStyle,
) -> Result<()> {
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
                .drawn()?;
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
                .drawn()?;
            }
        }
        Key::Area => {
            for (k, c) in colors.iter().take(6).enumerate() {
                let (a, b) = stripe(k);
                area.draw(&Rectangle::new(
                    [(x + a, y0), (x + b, y1)],
                    c.mix(OPEN_ALPHA).filled(),
                ))
                .drawn()?;
                area.draw(&PathElement::new(
                    vec![(x + a, y0), (x + b, y0)],
                    c.stroke_width(2),
                ))
                .drawn()?;
            }
        }
        Key::Bar => area
            .draw(&Rectangle::new(
                [(x + 6, y0), (x + 16, y1)],
                RETRIES.mix(BAR_ALPHA).filled(),
            ))
            .drawn()?,
        Key::Trigger => area
            .draw(&Rectangle::new(
                [(x, y0), (x + 22, y1)],
                TRIGGER.mix(0.13).filled(),
            ))
            .drawn()?,
    }
    area.draw(&Text::new(label.clone(), (x + 30, y0), font.clone()))
        .drawn()?;
    Ok(())
}

/// How many retry budgets and circuit breakers a variant has (0 for none).
fn instances(s: &Scenario) -> (usize, usize) {
    s.clients.iter().fold((0, 0), |(budgets, breakers), g| {
        let p = s.group_policy(g);
        (
            budgets + p.budget.as_ref().map_or(0, |b| b.scope.instances(g.count)),
            breakers + p.breaker.as_ref().map_or(0, |b| b.scope.instances(g.count)),
        )
    })
}

/// Whether a variant's budget is a token bucket, which allows retries only above half full.
fn token_bucket(s: &Scenario) -> bool {
    s.policy
        .budget
        .as_ref()
        .is_some_and(|b| matches!(b.kind, BudgetKind::TokenBucket { .. }))
}

/// The variants of the focus point that have a budget or a breaker, by position in the file.
/// (A run read back from a folder whose summary lists fewer variants shows what it has.)
fn panels(run: &Run) -> Vec<usize> {
    let ran = run.ran().iter().enumerate();
    let has = ran.filter(|(_, v)| instances(&v.scenario) != (0, 0));
    has.map(|(j, _)| j)
        .filter(|&j| j < run.point().variants.len())
        .collect()
}

/// A row's budget level in %, for a variant with `counts` budgets and breakers; `None`
/// without a budget.
fn budget_pct(counts: (usize, usize), r: &Row) -> Option<f64> {
    (counts.0 > 0).then(|| r[Column::BudgetLevel as usize] * 100.0)
}

/// A row's share of breakers open in %; `None` without a breaker.
fn open_pct(counts: (usize, usize), r: &Row) -> Option<f64> {
    (counts.1 > 0).then(|| r[Column::BreakersOpen as usize] / counts.1 as f64 * 100.0)
}

/// The policy-over-time figure.
pub struct PolicyOverTime;

impl Chart for PolicyOverTime {
    type Table = Series;

    fn stem(&self) -> &'static str {
        "policy-over-time"
    }

    /// Some variant (at the focus point) has a retry budget or a circuit breaker.
    fn applies(&self, run: &Run) -> bool {
        run.ran().iter().any(|v| instances(&v.scenario) != (0, 0))
    }

    fn caption(&self, run: &Run) -> String {
        let shown = || panels(run).into_iter().map(|j| &run.ran()[j].scenario);
        let mut marks = Vec::new();
        let envoy = |s: &Scenario| {
            s.policy
                .budget
                .as_ref()
                .is_some_and(|b| matches!(b.kind, BudgetKind::Envoy(_)))
        };
        if shown().any(|s| instances(s).0 > 0 && !envoy(s)) {
            marks.push("line: the budgets' mean level, 100 % is full; a budget drains as failures mount and stops retries when it is empty");
        }
        if shown().any(envoy) {
            marks.push("for an Envoy limit (retry_budget, max_retries) the line is its headroom: the share of the limit, at the attempts active then, not taken by retries in flight; at 0 % every new retry is denied");
        }
        if shown().any(token_bucket) {
            marks.push("dashed: half full, under which a token bucket stops retries");
        }
        if shown().any(|s| instances(s).1 > 0) {
            marks.push("shaded: the share of breakers open; breakers open and close again");
        }
        let rows = |t: Series| {
            t.lines.iter().any(|l| {
                t.frame.rows[l.row]
                    .iter()
                    .any(|r| r[Column::Retries as usize] > 0.0)
            })
        };
        if self.table(run).is_ok_and(rows) {
            marks.push("grey bars: retries sent, on one right-hand scale for every panel");
        }
        format!(
            "The retry budgets and circuit breakers over time, a panel per variant that has either, on a time axis that ends with their activity ({}).",
            marks.join("; ")
        )
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        let panels = run
            .ran()
            .iter()
            .filter(|v| instances(&v.scenario) != (0, 0));
        super::rows_size(panels.count(), 150, 66)
    }

    /// `variant, bucket_start_s, bucket_s, budgets, budget_level_pct, breakers,
    /// breakers_open, breakers_open_pct, retries_per_s` (and `trigger`), the values drawn.
    fn table(&self, run: &Run) -> Result<Series> {
        // The time axis of the variants drawn: a variant without a budget or a breaker that
        // runs on for long would squeeze them.
        let mut series = Series::of_variants(run, &[]);
        let shown = panels(run);
        series.lines.retain(|l| shown.contains(&l.variant));
        let variants: Vec<&VariantResult> =
            shown.iter().map(|&j| &run.point().variants[j]).collect();
        series.frame = Frame::of(&variants);
        for (k, line) in series.lines.iter_mut().enumerate() {
            line.row = k;
        }
        series.trigger = series.lines.iter().any(|l| !l.windows.is_empty());
        let columns = [
            "budgets",
            "budget_level_pct",
            "breakers",
            "breakers_open",
            "breakers_open_pct",
            "retries_per_s",
        ];
        series.columns = columns.map(String::from).to_vec();
        let counts: Vec<(usize, usize)> =
            run.ran().iter().map(|v| instances(&v.scenario)).collect();
        series.cells = Box::new(move |line, row| {
            let c = counts[line.variant];
            let text = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
            let count = |n: usize| if n > 0 { n.to_string() } else { String::new() };
            vec![
                count(c.0),
                text(budget_pct(c, row)),
                count(c.1),
                text((c.1 > 0).then(|| row[Column::BreakersOpen as usize])),
                text(open_pct(c, row)),
                row[Column::Retries as usize].to_string(),
            ]
        });
        Ok(series)
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let frame = &table.frame;
        let retries = |r: &Row| r[Column::Retries as usize];
        let drawn = || table.lines.iter().flat_map(|l| &frame.rows[l.row]);
        let any_retries = drawn().any(|r| retries(r) > 0.0);
        let keys = keys(run, table, any_retries);
        // The title, then the legend in as many rows as its keys need.
        let (width, _) = root.dim_in_pixel();
        let rows = key_rows(&keys, width).len() as u32;
        root.fill(&WHITE).drawn()?;
        let (head, body) = root.split_vertically(34 + rows * KEY_ROW + 4);
        let (title_area, legend_area) = head.split_vertically(34);
        let title = format!(
            "{}: retry budgets and circuit breakers{}",
            run.name(),
            run.at()
        );
        canvas::draw_title(&title_area, &title, 17)?;
        legend(&legend_area, &keys)?;
        // One retries scale for every panel, so the bars compare across policies.
        let retries_top = drawn().map(retries).fold(0.0, f64::max).max(1e-9) * 1.1;
        let right = any_retries.then_some((retries_top, "retries (/s)"));
        let areas = body.split_evenly((table.lines.len(), 1));
        for (k, (line, area)) in table.lines.iter().zip(&areas).enumerate() {
            let last = k + 1 == table.lines.len();
            draw_panel(run, frame, line, area, (right, last))?;
        }
        Ok(())
    }
}

/// What the legend explains: only the marks some panel draws, in the colours of the panels
/// that draw them.
fn keys(run: &Run, table: &Series, any_retries: bool) -> Vec<(Key, String, Vec<RGBColor>)> {
    let ran = run.ran();
    let colors = |has: &dyn Fn(usize) -> bool| -> Vec<RGBColor> {
        let with = table.lines.iter().filter(|l| has(l.variant));
        with.map(|l| variant_color(l.variant)).collect()
    };
    let counts = |j: usize| instances(&ran[j].scenario);
    let token = |j: usize| token_bucket(&ran[j].scenario);
    let mut keys: Vec<(Key, String, Vec<RGBColor>)> = Vec::new();
    let budgets = colors(&|j| counts(j).0 > 0);
    if !budgets.is_empty() {
        keys.push((Key::Line, "budget level".into(), budgets));
    }
    let buckets = colors(&token);
    if !buckets.is_empty() {
        let words = "token bucket's retry threshold".into();
        keys.push((Key::Threshold, words, buckets));
    }
    let breakers = colors(&|j| counts(j).1 > 0);
    if !breakers.is_empty() {
        let words = "breakers open (share of breakers and replications)".into();
        keys.push((Key::Area, words, breakers));
    }
    if any_retries {
        let words = format!(
            "retries sent per second ({}, right axis)",
            table.frame.bucket_words()
        );
        keys.push((Key::Bar, words, Vec::new()));
    }
    if table.trigger {
        keys.push((Key::Trigger, "trigger".into(), Vec::new()));
    }
    keys
}

/// One variant's panel: its triggers, its breakers open, its token bucket's threshold, its
/// budget level, and the retries on top, translucent, so that none hides behind a budget's
/// drop.
fn draw_panel<DB: DrawingBackend>(
    run: &Run,
    frame: &Frame,
    line: &Line,
    area: &Area<DB>,
    (right, last): (Option<(f64, &str)>, bool),
) -> Result<()> {
    let j = line.variant;
    let (scenario, color) = (&run.ran()[j].scenario, variant_color(j));
    let counts = instances(scenario);
    let rows = &frame.rows[line.row];
    let title = panel_title(&run.point().variants[j], scenario);
    // Room above 100 %: a full budget's line is not cut by the panel's edge, and the trigger
    // label sits above it.
    let percent = |y: &f64| format!("{} %", tick(y));
    let spec = PanelSpec {
        y_format: Some(&percent),
        right,
        ..PanelSpec::new(&title, color, YAxis::linear(TOP), "", last)
    };
    let mut chart = over_time::panel(area, frame, &spec)?;
    // The trigger bands go under the data.
    chart
        .draw_series(triggers::bands(&line.windows, frame.x1, (0.0, TOP)))
        .drawn()?;
    // States are sampled at the end of their bucket.
    let at_end = |i: usize| frame.start(i) + frame.bucket;
    let series = |f: fn((usize, usize), &Row) -> Option<f64>| {
        let points = rows.iter().enumerate();
        points.filter_map(move |(i, r)| Some((at_end(i), f(counts, r)?)))
    };
    if counts.1 > 0 {
        let open = AreaSeries::new(series(open_pct), 0.0, color.mix(OPEN_ALPHA));
        chart
            .draw_series(open.border_style(color.stroke_width(2)))
            .drawn()?;
    }
    if token_bucket(scenario) {
        // gRPC retries only while tokens > max_tokens / 2.
        let end = at_end(rows.len().saturating_sub(1));
        let half = [(0.0, 50.0), (end, 50.0)];
        let style = color.mix(0.8).stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(half, 6, 4, style))
            .drawn()?;
    }
    if counts.0 > 0 {
        let level = LineSeries::new(series(budget_pct), color.stroke_width(3));
        chart.draw_series(level).drawn()?;
    }
    if right.is_some() {
        let retries = |r: &Row| r[Column::Retries as usize];
        let bars = over_time::bars(
            frame,
            rows,
            |_| 0.0,
            retries,
            RETRIES.mix(BAR_ALPHA).filled(),
        );
        chart.draw_secondary_series(bars).drawn()?;
    }
    Ok(())
}

/// A panel's title: the variant's name and its budgets and breakers, and for a variant whose
/// replications split between recovering and staying collapsed, the same warning as the
/// load-over-time figure gives (the panel is their mean, which looks like no single run).
/// Token buckets kept per client say that the line is their mean and the dashed threshold
/// each one's: budget-dilution's mean of 10,000 buckets crossed half full while the buckets
/// of clients that had sent nothing yet went on letting retries through.
fn panel_title(v: &VariantResult, s: &Scenario) -> String {
    if s.has_groups() {
        return groups_title(v, s);
    }
    let clients = s.clients[0].count;
    let mean_of_many = token_bucket(s)
        && clients > 1
        && s.policy.budget.as_ref().map(|b| b.scope) == Some(Scope::PerClient);
    let mut title = format!(
        "{}: {}",
        super::display_name(v),
        instances_words(&s.policy, clients)
    );
    if mean_of_many {
        title.push_str(" (line: their mean; each stops retries below half on its own)");
    }
    if let Some(note) = triggers::split_note(v) {
        title.push_str(&format!(" ({note})"));
    }
    title
}

/// A group's budgets and breakers in words: "one shared budget", "10 breakers, one per
/// client", or "none".
fn instances_words(p: &crate::scenario::Policy, clients: u32) -> String {
    let what = |scope: Option<Scope>, one: &str| {
        scope.map(|scope| match scope {
            Scope::Shared => format!("one shared {one}"),
            Scope::PerClient if clients == 1 => format!("one {one}"),
            Scope::PerClient => format!("{clients} {one}s, one per client"),
        })
    };
    let words: Vec<String> = [
        what(p.budget.as_ref().map(|b| b.scope), "budget"),
        what(p.breaker.as_ref().map(|b| b.scope), "breaker"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if words.is_empty() {
        "none".to_string()
    } else {
        words.join(", ")
    }
}

/// A panel's title where the clients form several groups: each group's budgets and
/// breakers, and that the line is the mean level of every budget of every group.
fn groups_title(v: &VariantResult, s: &Scenario) -> String {
    let groups: Vec<String> = s
        .clients
        .iter()
        .map(|g| {
            format!(
                "{} has {}",
                g.name,
                instances_words(s.group_policy(g), g.count)
            )
        })
        .collect();
    let mut title = format!("{}: {}", super::display_name(v), groups.join("; "));
    if instances(s).0 > 1 {
        title.push_str(" (line: the mean of every group's budgets)");
    }
    if let Some(note) = triggers::split_note(v) {
        title.push_str(&format!(" ({note})"));
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{LoadOptions, load_str};

    /// budget-dilution's panel of 10,000 per-client token buckets drew their mean level
    /// crossing the dashed threshold while retries went on: the title now says the line is
    /// a mean and the threshold each bucket's; one shared bucket, or a ratio budget (no
    /// threshold), keeps its plain title.
    #[test]
    fn a_mean_of_per_client_buckets_says_each_stops_on_its_own() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join("budget-dilution.json");
        let options = LoadOptions {
            replications: Some(1),
            sweep: Some(crate::scenario::Sweep::new(
                "clients.count",
                vec![20.into()],
            )),
            ..LoadOptions::default()
        };
        let text = std::fs::read_to_string(path).unwrap();
        let experiment = load_str(&text, "budget-dilution.json", &options).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let words = "each stops retries below half on its own";
        let titles: Vec<(String, String)> = experiment.points[0]
            .variants
            .iter()
            .zip(&result.points[0].variants)
            .map(|(spec, v)| (spec.name.clone(), panel_title(v, &spec.scenario)))
            .collect();
        for (name, title) in &titles {
            assert_eq!(
                title.contains(words),
                name == "token bucket per client",
                "{name}: {title}"
            );
        }
    }

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
                    right = x + 30 + super::canvas::text_width(&keys[i].1, KEY_FONT) as i32;
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
