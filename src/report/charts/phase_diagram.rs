//! A two-axis sweep as a phase diagram: a panel per variant, a grid of cells with the first
//! swept setting across and the second up, each cell coloured by one metric on a sequential
//! scale shared by every panel, with the value printed in the cell when it fits.
//!
//! The metric is the fraction of replications that recovered after the scenario's trigger
//! when the variants' metrics have it (`recovery.recovered_fraction`), else the success rate.
//! Both lie in [0, 1], so the scale is fixed: panels and runs compare at a glance.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{FONT, variant_color};
use crate::metrics::ExperimentResult;
use crate::metrics::{Metric, Metrics};
use crate::report::value_text;
use crate::scenario::Experiment;

/// The caption's first sentence; [`caption`] adds what the colour means.
pub const CAPTION: &str = "Each cell is one (x, y) pair of the two swept settings, a panel per variant; the number in a cell (when there is room) is its value in %.";

/// What the cells show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseMetric {
    /// The metric (a value in [0, 1]).
    pub metric: Metric,
    /// Short label with its unit, for the legend and tables.
    pub label: &'static str,
    /// What it is, in words.
    pub words: &'static str,
    /// What a dark cell means.
    pub dark: &'static str,
    /// What a bright cell means.
    pub bright: &'static str,
}

/// The fraction of replications that recovered after the trigger.
const RECOVERED: PhaseMetric = PhaseMetric {
    metric: Metric::RECOVERED,
    label: "recovered %",
    words: "the fraction of replications that recovered after the trigger",
    dark: "no replication recovered after the trigger (a storm that persists)",
    bright: "every replication recovered",
};

/// The share of requests that succeeded.
const SUCCESS: PhaseMetric = PhaseMetric {
    metric: Metric::SUCCESS_RATE,
    label: "success %",
    words: "the share of requests that succeeded",
    dark: "few requests succeeded",
    bright: "every request succeeded",
};

/// The metric of a run's phase diagram: the recovered fraction when every variant at every
/// point has it, else the success rate.
pub fn phase_metric(result: &ExperimentResult) -> PhaseMetric {
    metric_of(
        result
            .points
            .iter()
            .flat_map(|p| &p.variants)
            .map(|v| &v.metrics),
    )
}

/// The recovered fraction if every one of these variants has it, else the success rate.
fn metric_of<'a>(mut docs: impl Iterator<Item = &'a Metrics>) -> PhaseMetric {
    if docs.all(|m| RECOVERED.metric.get(m).is_some()) {
        RECOVERED
    } else {
        SUCCESS
    }
}

/// The full caption: [`CAPTION`] with the axes and what the colours mean.
pub fn caption(base: &str, experiment: &Experiment, result: &ExperimentResult) -> String {
    let m = phase_metric(result);
    let axes = experiment
        .sweep
        .as_ref()
        .and_then(|s| Some((s.path.as_str(), s.second.as_ref()?.path.as_str())))
        .map_or(String::new(), |(x, y)| {
            format!(" x is `{x}` (across), y is `{y}` (up).")
        });
    format!(
        "{base}{axes} Colour: {}, on one scale for every panel: dark = {}, bright = {}.",
        m.words, m.dark, m.bright
    )
}

/// Panels per row and rows for `variants` panels.
fn layout(variants: usize) -> (usize, usize) {
    let n = variants.max(1);
    let cols = (1..).find(|c| c * c >= n).unwrap_or(1);
    (cols, n.div_ceil(cols))
}

/// The figure's size: 1000 pixels wide, a row of panels every 400 or so.
pub fn size(variants: usize) -> (u32, u32) {
    let (cols, rows) = layout(variants);
    let row = if cols == 1 { 540 } else { 400 };
    (super::SIZE.0, TITLE + row * rows as u32)
}

/// Height of the figure's title, pixels.
const TITLE: u32 = 44;
/// Width of the colour legend on the right, pixels.
const LEGEND: u32 = 110;

/// The viridis colour map at 11 evenly spaced stops: perceptually uniform, readable in grey
/// and by colour-blind readers; dark purple is 0, yellow is 1.
const VIRIDIS: [(u8, u8, u8); 11] = [
    (0x44, 0x01, 0x54),
    (0x48, 0x24, 0x75),
    (0x41, 0x44, 0x87),
    (0x35, 0x5f, 0x8d),
    (0x2a, 0x78, 0x8e),
    (0x21, 0x91, 0x8c),
    (0x22, 0xa8, 0x84),
    (0x44, 0xbf, 0x70),
    (0x7a, 0xd1, 0x51),
    (0xbd, 0xdf, 0x26),
    (0xfd, 0xe7, 0x25),
];

/// The colour of `t` in [0, 1] (clamped; not a number is 0).
fn color_at(t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Black or white, whichever reads better on `c`.
fn ink_on(c: RGBColor) -> RGBColor {
    let luminance = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    if luminance > 140.0 { BLACK } else { WHITE }
}

/// A cell's text: the value in % without needless decimals.
fn percent(x: f64) -> String {
    let p = 100.0 * x;
    if (p - p.round()).abs() < 0.05 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

/// A tick label: the value as tables show it, shortened when long.
fn short_label(v: &serde_json::Value) -> String {
    let text = value_text(Some(v));
    if text.chars().count() > 14 {
        let head: String = text.chars().take(13).collect();
        format!("{head}…")
    } else {
        text
    }
}

/// Draws the panels and the colour legend and returns their CSV (variant, x, y, value,
/// ci95; the value as summary.json has it, in [0, 1]).
pub fn draw<DB: DrawingBackend>(
    experiment: &Experiment,
    result: &ExperimentResult,
    root: &DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let sweep = experiment
        .sweep
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("a phase diagram needs a sweep"))?;
    let second = sweep
        .second
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("a phase diagram needs a two-axis sweep"))?;
    let m = phase_metric(result);
    let names: Vec<String> = result.points[0]
        .variants
        .iter()
        .map(|v| v.name.clone())
        .collect();
    let (nx, ny) = (sweep.values.len(), second.values.len());
    // cells[variant][i][j] = (mean, half-width) at first value i, second value j.
    let cells: Vec<Vec<Vec<(f64, f64)>>> = (0..names.len())
        .map(|k| {
            (0..nx)
                .map(|i| {
                    (0..ny)
                        .map(|j| {
                            let v = &result.points[sweep.point_index(i, j)].variants[k];
                            (m.metric.value(&v.metrics), m.metric.value(&v.ci95))
                        })
                        .collect()
                })
                .collect()
        })
        .collect();

    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "variant",
        sweep.path.as_str(),
        second.path.as_str(),
        m.metric.key,
        "ci95",
    ])?;
    for (k, name) in names.iter().enumerate() {
        for (i, x) in sweep.values.iter().enumerate() {
            for (j, y) in second.values.iter().enumerate() {
                let (mean, half) = cells[k][i][j];
                w.write_record([
                    name.clone(),
                    value_text(Some(x)),
                    value_text(Some(y)),
                    mean.to_string(),
                    half.to_string(),
                ])?;
            }
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(TITLE);
    let (x_title, y_title) = (sweep.label.clone(), second.label.clone());
    super::draw_title(
        &title_area,
        &format!(
            "{}: {} for every {x_title} and {y_title}",
            experiment.name, m.label
        ),
        20,
    )?;
    let (width, _) = body.dim_in_pixel();
    let (panels, legend) = body.split_horizontally(width.saturating_sub(LEGEND));
    let (cols, rows) = layout(names.len());
    let areas = panels.split_evenly((rows, cols));
    for (k, (name, area)) in names.iter().zip(&areas).enumerate() {
        let labels = Labels {
            x: (
                x_title.as_str(),
                sweep.values.iter().map(short_label).collect(),
            ),
            y: (
                y_title.as_str(),
                second.values.iter().map(short_label).collect(),
            ),
            x_desc: k + cols >= names.len(),
            y_desc: k % cols == 0,
        };
        draw_panel(area, name, variant_color(k), &cells[k], &labels)?;
    }
    draw_legend(&legend, m.label)?;
    Ok(csv)
}

/// A panel's axis labels: (setting, tick labels) per axis, and whether it names each axis
/// (the bottom row names x, the left column names y).
struct Labels<'a> {
    x: (&'a str, Vec<String>),
    y: (&'a str, Vec<String>),
    x_desc: bool,
    y_desc: bool,
}

/// One variant's grid, laid out in pixels so that labels never overlap: tick labels are
/// thinned to every k-th value when the cells are narrower than the labels.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    name: &str,
    color: RGBColor,
    cells: &[Vec<(f64, f64)>],
    labels: &Labels,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let tick_style = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
    let desc_style = TextStyle::from((FONT, 15).into_font()).color(&BLACK);
    let text_width = |text: &str, style: &TextStyle| -> anyhow::Result<i32> {
        Ok(area.estimate_text_size(text, style).map_err(err)?.0 as i32)
    };
    let (nx, ny) = (labels.x.1.len().max(1), labels.y.1.len().max(1));

    // The grid's box: room on the left for the y labels (and the y axis' name), below for
    // the x labels (and the x axis' name), above for the variant's name.
    let widest = |texts: &[String]| -> anyhow::Result<i32> {
        let mut most = 0;
        for t in texts {
            most = most.max(text_width(t, &tick_style)?);
        }
        Ok(most)
    };
    let widest_y = widest(&labels.y.1)?;
    let left = 14 + widest_y + 8 + if labels.y_desc { 24 } else { 0 };
    let (top, right) = (34, 14);
    let bottom = 8 + 18 + if labels.x_desc { 26 } else { 4 };
    let (gx0, gx1, gy0, gy1) = (left, w - right, top, h - bottom);
    if gx1 - gx0 < 10 || gy1 - gy0 < 10 {
        return Ok(());
    }
    let cw = f64::from(gx1 - gx0) / nx as f64;
    let ch = f64::from(gy1 - gy0) / ny as f64;
    // Cell edges in pixels, rounded once so that neighbours share their edge.
    let xe: Vec<i32> = (0..=nx)
        .map(|i| gx0 + (i as f64 * cw).round() as i32)
        .collect();
    // y goes up: the first second-axis value is the bottom row.
    let ye: Vec<i32> = (0..=ny)
        .map(|j| gy1 - (j as f64 * ch).round() as i32)
        .collect();

    area.draw(&Text::new(
        name.to_string(),
        (gx0, 8),
        TextStyle::from((FONT, 17).into_font()).color(&color),
    ))
    .map_err(err)?;

    // Values print only when the widest one fits its cell with a margin.
    let value_size = (ch * 0.42).clamp(11.0, 16.0) as u32;
    let value_style = TextStyle::from((FONT, value_size).into_font());
    let mut widest_value = 0;
    for (mean, _) in cells.iter().flatten() {
        widest_value = widest_value.max(text_width(&percent(*mean), &value_style)?);
    }
    let print = cw >= f64::from(widest_value + 4) && ch >= f64::from(value_size + 7);
    for (i, column) in cells.iter().enumerate() {
        for (j, (mean, _)) in column.iter().enumerate() {
            let fill = color_at(*mean);
            area.draw(&Rectangle::new(
                [(xe[i], ye[j + 1]), (xe[i + 1], ye[j])],
                fill.filled(),
            ))
            .map_err(err)?;
            if print {
                let centre = ((xe[i] + xe[i + 1]) / 2, (ye[j] + ye[j + 1]) / 2);
                area.draw(&Text::new(
                    percent(*mean),
                    centre,
                    value_style
                        .color(&ink_on(fill))
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                ))
                .map_err(err)?;
            }
        }
    }
    // A thin white grid keeps neighbouring cells of one colour apart.
    for &x in &xe[1..nx] {
        area.draw(&PathElement::new(
            vec![(x, gy0), (x, gy1)],
            WHITE.stroke_width(1),
        ))
        .map_err(err)?;
    }
    for &y in &ye[1..ny] {
        area.draw(&PathElement::new(
            vec![(gx0, y), (gx1, y)],
            WHITE.stroke_width(1),
        ))
        .map_err(err)?;
    }
    area.draw(&Rectangle::new([(gx0, gy0), (gx1, gy1)], BLACK.mix(0.4)))
        .map_err(err)?;

    // Tick labels, every k-th when they would crowd.
    let widest_x = widest(&labels.x.1)?;
    let every_x = ((f64::from(widest_x + 10) / cw).ceil() as usize).max(1);
    for (i, label) in labels.x.1.iter().enumerate().step_by(every_x) {
        area.draw(&Text::new(
            label.clone(),
            ((xe[i] + xe[i + 1]) / 2, gy1 + 6),
            tick_style.pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(err)?;
    }
    let every_y = ((18.0 / ch).ceil() as usize).max(1);
    for (j, label) in labels.y.1.iter().enumerate().step_by(every_y) {
        area.draw(&Text::new(
            label.clone(),
            (gx0 - 8, (ye[j] + ye[j + 1]) / 2),
            tick_style.pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(err)?;
    }
    if labels.x_desc {
        area.draw(&Text::new(
            labels.x.0.to_string(),
            ((gx0 + gx1) / 2, h - 6),
            desc_style.pos(Pos::new(HPos::Center, VPos::Bottom)),
        ))
        .map_err(err)?;
    }
    if labels.y_desc {
        area.draw(&Text::new(
            labels.y.0.to_string(),
            (10, (gy0 + gy1) / 2),
            desc_style
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The colour scale: a vertical bar from 0 % (bottom) to 100 % (top) with its ticks.
fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, label: &str) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    let (_, h) = area.dim_in_pixel();
    let (x0, x1) = (14, 36);
    // At most 360 pixels tall: a scale, not a panel.
    let (y0, y1) = (60, (h as i32 - 60).clamp(120, 420));
    area.draw(&Text::new(
        label.to_string(),
        (x0 - 4, y0 - 30),
        TextStyle::from((FONT, 14).into_font()).color(&BLACK),
    ))
    .map_err(err)?;
    let span = y1 - y0;
    for step in 0..span {
        let t = 1.0 - f64::from(step) / f64::from(span - 1);
        area.draw(&Rectangle::new(
            [(x0, y0 + step), (x1, y0 + step + 1)],
            color_at(t).filled(),
        ))
        .map_err(err)?;
    }
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.mix(0.4)))
        .map_err(err)?;
    let tick_style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for pct in [0, 25, 50, 75, 100] {
        let y = y1 - (f64::from(span) * f64::from(pct) / 100.0).round() as i32;
        area.draw(&PathElement::new(vec![(x1, y), (x1 + 5, y)], BLACK))
            .map_err(err)?;
        area.draw(&Text::new(
            format!("{pct}"),
            (x1 + 8, y),
            tick_style.clone(),
        ))
        .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_runs_from_dark_to_bright() {
        let lum =
            |c: RGBColor| 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
        let steps: Vec<f64> = (0..=20)
            .map(|i| lum(color_at(f64::from(i) / 20.0)))
            .collect();
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
        assert_eq!(color_at(-1.0), color_at(0.0));
        assert_eq!(color_at(2.0), color_at(1.0));
        assert_eq!(ink_on(color_at(0.0)), WHITE);
        assert_eq!(ink_on(color_at(1.0)), BLACK);
    }

    #[test]
    fn cells_show_recovery_when_every_variant_has_it() {
        let plain = Metrics {
            success_rate: 0.5,
            ..Metrics::default()
        };
        let recovered = Metrics {
            recovery: Some(crate::metrics::RecoveryMetrics {
                recovered_fraction: 0.25,
                ..Default::default()
            }),
            ..plain.clone()
        };
        assert_eq!(metric_of([&recovered, &recovered].into_iter()), RECOVERED);
        assert_eq!(metric_of([&recovered, &plain].into_iter()), SUCCESS);
        assert_eq!(metric_of([&plain].into_iter()), SUCCESS);
    }

    #[test]
    fn panels_form_a_near_square_grid() {
        assert_eq!(layout(1), (1, 1));
        assert_eq!(layout(2), (2, 1));
        assert_eq!(layout(3), (2, 2));
        assert_eq!(layout(4), (2, 2));
        assert_eq!(layout(5), (3, 2));
        assert_eq!(percent(0.5), "50");
        assert_eq!(percent(0.123), "12.3");
    }
}
