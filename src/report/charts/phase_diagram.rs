//! A two-axis sweep as a phase diagram: a panel per variant, a grid of cells with the first
//! swept setting across and the second up, each cell coloured by one metric on a sequential
//! scale shared by every panel, with the value printed in the cell when it fits.
//!
//! The metric is the fraction of replications that recovered after the scenario's trigger
//! when the variants' metrics have it (`recovery.recovered_fraction`), else the success rate.
//! Both lie in [0, 1], so the scale is fixed: panels and runs compare at a glance.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{self, Area, Drawn};
use super::style::{FONT, variant_color};
use super::{Chart, Run, Table};
use crate::metrics::ExperimentResult;
use crate::metrics::{Metric, Metrics};
use crate::report::value_text;
use crate::scenario::{Axis, Sweep};

/// The caption's first sentence; the rest says what the colour and the interval mean.
const CAPTION: &str = "Each cell is one (x, y) pair of the two swept settings, a panel per variant; the number in a cell (when there is room) is its value in %, and the smaller range under it its 95 % interval.";

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
    /// How its 95 % interval is found, in words.
    pub interval: &'static str,
    /// The metrics that hold the interval's ends, where the metric has them; else the
    /// interval is the mean plus and minus its `ci95`.
    pub bounds: Option<(Metric, Metric)>,
}

/// The fraction of replications that recovered after the trigger.
const RECOVERED: PhaseMetric = PhaseMetric {
    metric: Metric::RECOVERED,
    label: "recovered %",
    words: "the fraction of replications that recovered after the trigger",
    dark: "no replication recovered after the trigger (a storm that persists)",
    bright: "every replication recovered",
    interval: "the Wilson score interval of the replications that recovered out of those run (8 of 8 is not a certainty)",
    bounds: Some((Metric::RECOVERED_LOWER, Metric::RECOVERED_UPPER)),
};

/// The share of requests that succeeded.
const SUCCESS: PhaseMetric = PhaseMetric {
    metric: Metric::SUCCESS_RATE,
    label: "success %",
    words: "the share of requests that succeeded",
    dark: "few requests succeeded",
    bright: "every request succeeded",
    interval: "the mean's t interval over the replications, within 0-100 %",
    bounds: None,
};

impl PhaseMetric {
    /// The cell of a variant whose metrics are `m` and half-widths `ci95`.
    fn cell(&self, m: &Metrics, ci95: &Metrics) -> Cell {
        let mean = self.metric.value(m);
        let (lower, upper) = match self.bounds {
            Some((lo, hi)) => (lo.value(m), hi.value(m)),
            None => {
                let half = self.metric.value(ci95);
                ((mean - half).max(0.0), (mean + half).min(1.0))
            }
        };
        Cell { mean, lower, upper }
    }
}

/// One cell: the metric's value and its 95 % interval, each in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cell {
    mean: f64,
    lower: f64,
    upper: f64,
}

impl Cell {
    /// The interval as a cell prints it, rounded outwards to whole percent: "67-100".
    fn range(&self) -> String {
        let (lower, upper) = ((100.0 * self.lower).floor(), (100.0 * self.upper).ceil());
        format!("{lower:.0}\u{2013}{upper:.0}")
    }
}

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

/// Panels per row and rows for `variants` panels.
fn layout(variants: usize) -> (usize, usize) {
    let n = variants.max(1);
    let cols = (1..).find(|c| c * c >= n).unwrap_or(1);
    (cols, n.div_ceil(cols))
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

/// The phase diagram figure.
pub struct PhaseDiagram;

/// The cells of every panel: the metric, the axes' paths and values (as tables show them),
/// the variants' names, and per variant `cells[i][j]` at first value i and second value j.
pub struct Cells {
    metric: PhaseMetric,
    paths: (String, String),
    values: (Vec<String>, Vec<String>),
    names: Vec<String>,
    cells: Vec<Vec<Vec<Cell>>>,
}

impl Table for Cells {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        let (x, y) = &self.paths;
        let key = self.metric.metric.key;
        w.write_record(["variant", x, y, key, "ci95_lower", "ci95_upper"])?;
        for (name, cells) in self.names.iter().zip(&self.cells) {
            for (x, column) in self.values.0.iter().zip(cells) {
                for (y, c) in self.values.1.iter().zip(column) {
                    let [mean, lower, upper] = [c.mean, c.lower, c.upper].map(|v| v.to_string());
                    w.write_record([name, x, y, &mean, &lower, &upper])?;
                }
            }
        }
        Ok(())
    }
}

impl Chart for PhaseDiagram {
    type Table = Cells;

    fn stem(&self) -> &'static str {
        "phase-diagram"
    }

    fn applies(&self, run: &Run) -> bool {
        let sweep = run.experiment.sweep.as_ref();
        sweep.is_some_and(|s| s.second.is_some())
    }

    fn caption(&self, run: &Run) -> String {
        let m = phase_metric(run.result);
        let axes = run
            .experiment
            .sweep
            .as_ref()
            .and_then(|s| Some((s.path.as_str(), s.second.as_ref()?.path.as_str())))
            .map_or(String::new(), |(x, y)| {
                format!(" x is `{x}` (across), y is `{y}` (up).")
            });
        format!(
            "{CAPTION}{axes} Colour: {}, on one scale for every panel: dark = {}, bright = {}. The interval is {}.",
            m.words, m.dark, m.bright, m.interval
        )
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        let (cols, rows) = layout(run.variants().len());
        let row = if cols == 1 { 540 } else { 400 };
        (super::SIZE.0, TITLE + row * rows as u32)
    }

    fn table(&self, run: &Run) -> Result<Cells> {
        let (sweep, second) = axes(run)?;
        let m = phase_metric(run.result);
        let (nx, ny) = (sweep.values.len(), second.values.len());
        let cell = |k: usize, i: usize, j: usize| {
            let v = &run.result.points[sweep.point_index(i, j)].variants[k];
            m.cell(&v.metrics, &v.ci95)
        };
        let cells = (0..run.variants().len())
            .map(|k| {
                let column = |i| (0..ny).map(|j| cell(k, i, j)).collect();
                (0..nx).map(column).collect()
            })
            .collect();
        let text =
            |values: &[serde_json::Value]| values.iter().map(|v| value_text(Some(v))).collect();
        Ok(Cells {
            metric: m,
            paths: (sweep.path.clone(), second.path.clone()),
            values: (text(&sweep.values), text(&second.values)),
            names: run.variants().iter().map(|v| v.name.clone()).collect(),
            cells,
        })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Cells, root: &Area<DB>) -> Result<()> {
        let (sweep, second) = axes(run)?;
        let (x_title, y_title) = (sweep.label.clone(), second.label.clone());
        let reps = run.experiment.replications;
        let title = format!(
            "{}: {} for every {x_title} and {y_title}, {reps} replication{} a cell",
            run.name(),
            table.metric.label,
            if reps == 1 { "" } else { "s" }
        );
        let body = canvas::titled(root, &title, TITLE, 20)?;
        let (width, _) = body.dim_in_pixel();
        let (panels, legend) = body.split_horizontally(width.saturating_sub(LEGEND));
        let n = table.names.len();
        let (cols, rows) = layout(n);
        let areas = panels.split_evenly((rows, cols));
        for (k, (name, area)) in table.names.iter().zip(&areas).enumerate() {
            let labels = Labels {
                x: (
                    x_title.as_str(),
                    sweep.values.iter().map(short_label).collect(),
                ),
                y: (
                    y_title.as_str(),
                    second.values.iter().map(short_label).collect(),
                ),
                x_desc: k + cols >= n,
                y_desc: k % cols == 0,
            };
            draw_panel(area, name, variant_color(k), &table.cells[k], &labels)?;
        }
        draw_legend(&legend, table.metric.label)
    }
}

/// The two axes of the run's sweep.
fn axes<'a>(run: &Run<'a>) -> Result<(&'a Sweep, &'a Axis)> {
    let sweep = run
        .experiment
        .sweep
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("a phase diagram needs a sweep"))?;
    let second = sweep
        .second
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("a phase diagram needs a two-axis sweep"))?;
    Ok((sweep, second))
}

/// A panel's axis labels: (setting, tick labels) per axis, and whether it names each axis
/// (the bottom row names x, the left column names y).
struct Labels<'a> {
    x: (&'a str, Vec<String>),
    y: (&'a str, Vec<String>),
    x_desc: bool,
    y_desc: bool,
}

/// A panel's grid in pixels: its box, x left to right and y top to bottom, and the cells'
/// edges and sizes (y bottom to top), rounded once so that neighbours share their edge.
struct Grid {
    x: (i32, i32),
    y: (i32, i32),
    xe: Vec<i32>,
    ye: Vec<i32>,
    cw: f64,
    ch: f64,
}

/// The widest of `texts` in `style`, in pixels.
fn widest<DB: DrawingBackend>(
    area: &Area<DB>,
    texts: impl IntoIterator<Item = String>,
    style: &TextStyle,
) -> Result<i32> {
    let mut most = 0;
    for t in texts {
        most = most.max(area.estimate_text_size(&t, style).drawn()?.0 as i32);
    }
    Ok(most)
}

/// One variant's grid, laid out in pixels so that labels never overlap: tick labels are
/// thinned to every k-th value when the cells are narrower than the labels.
fn draw_panel<DB: DrawingBackend>(
    area: &Area<DB>,
    name: &str,
    color: RGBColor,
    cells: &[Vec<Cell>],
    labels: &Labels,
) -> Result<()> {
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let tick_style = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
    let (nx, ny) = (labels.x.1.len().max(1), labels.y.1.len().max(1));
    // The grid's box: room on the left for the y labels (and the y axis' name), below for
    // the x labels (and the x axis' name), above for the variant's name.
    let widest_y = widest(area, labels.y.1.iter().cloned(), &tick_style)?;
    let left = 14 + widest_y + 8 + if labels.y_desc { 24 } else { 0 };
    let (top, right) = (34, 14);
    let bottom = 8 + 18 + if labels.x_desc { 26 } else { 4 };
    let (gx0, gx1, gy0, gy1) = (left, w - right, top, h - bottom);
    if gx1 - gx0 < 10 || gy1 - gy0 < 10 {
        return Ok(());
    }
    let cw = f64::from(gx1 - gx0) / nx as f64;
    let ch = f64::from(gy1 - gy0) / ny as f64;
    let grid = Grid {
        x: (gx0, gx1),
        y: (gy0, gy1),
        xe: (0..=nx)
            .map(|i| gx0 + (i as f64 * cw).round() as i32)
            .collect(),
        // y goes up: the first second-axis value is the bottom row.
        ye: (0..=ny)
            .map(|j| gy1 - (j as f64 * ch).round() as i32)
            .collect(),
        cw,
        ch,
    };
    let name_style = TextStyle::from((FONT, 17).into_font()).color(&color);
    area.draw(&Text::new(name.to_string(), (gx0, 8), name_style))
        .drawn()?;
    draw_cells(area, &grid, cells)?;
    draw_ticks(area, &grid, labels, &tick_style, h)
}

/// The coloured cells, their values where the widest one fits its cell with a margin, each
/// with its interval under it where two lines fit, and a thin white grid that keeps
/// neighbouring cells of one colour apart.
fn draw_cells<DB: DrawingBackend>(area: &Area<DB>, g: &Grid, cells: &[Vec<Cell>]) -> Result<()> {
    let (xe, ye) = (&g.xe, &g.ye);
    let value_size = (g.ch * 0.42).clamp(11.0, 16.0) as u32;
    let range_size = (value_size * 2 / 3).max(10);
    let value_style = TextStyle::from((FONT, value_size).into_font());
    let range_style = TextStyle::from((FONT, range_size).into_font());
    let flat = || cells.iter().flatten();
    let widest_value = widest(area, flat().map(|c| percent(c.mean)), &value_style)?;
    let widest_range = widest(area, flat().map(Cell::range), &range_style)?;
    let print = g.cw >= f64::from(widest_value + 4) && g.ch >= f64::from(value_size + 7);
    let two_lines = print
        && g.cw >= f64::from(widest_range + 4)
        && g.ch >= f64::from(value_size + range_size + 12);
    // With two lines, the value sits above the centre and the interval below it.
    let (value_dy, range_dy) = if two_lines {
        (-(range_size as i32) / 2 - 1, value_size as i32 / 2 + 2)
    } else {
        (0, 0)
    };
    for (i, column) in cells.iter().enumerate() {
        for (j, c) in column.iter().enumerate() {
            let fill = color_at(c.mean);
            let corners = [(xe[i], ye[j + 1]), (xe[i + 1], ye[j])];
            area.draw(&Rectangle::new(corners, fill.filled())).drawn()?;
            let (cx, cy) = ((xe[i] + xe[i + 1]) / 2, (ye[j] + ye[j + 1]) / 2);
            let ink = ink_on(fill);
            let centred = |style: &TextStyle<'static>| {
                style.color(&ink).pos(Pos::new(HPos::Center, VPos::Center))
            };
            if print {
                let at = (cx, cy + value_dy);
                area.draw(&Text::new(percent(c.mean), at, centred(&value_style)))
                    .drawn()?;
            }
            if two_lines {
                let at = (cx, cy + range_dy);
                area.draw(&Text::new(c.range(), at, centred(&range_style)))
                    .drawn()?;
            }
        }
    }
    let (nx, ny) = (xe.len() - 1, ye.len() - 1);
    for &x in &xe[1..nx] {
        let line = vec![(x, g.y.0), (x, g.y.1)];
        area.draw(&PathElement::new(line, WHITE.stroke_width(1)))
            .drawn()?;
    }
    for &y in &ye[1..ny] {
        let line = vec![(g.x.0, y), (g.x.1, y)];
        area.draw(&PathElement::new(line, WHITE.stroke_width(1)))
            .drawn()?;
    }
    let frame = [(g.x.0, g.y.0), (g.x.1, g.y.1)];
    area.draw(&Rectangle::new(frame, BLACK.mix(0.4))).drawn()?;
    Ok(())
}

/// The tick labels, every k-th when they would crowd, and the axes' names.
fn draw_ticks<DB: DrawingBackend>(
    area: &Area<DB>,
    g: &Grid,
    labels: &Labels,
    tick_style: &TextStyle,
    h: i32,
) -> Result<()> {
    let (xe, ye) = (&g.xe, &g.ye);
    let widest_x = widest(area, labels.x.1.iter().cloned(), tick_style)?;
    let every_x = ((f64::from(widest_x + 10) / g.cw).ceil() as usize).max(1);
    for (i, label) in labels.x.1.iter().enumerate().step_by(every_x) {
        let at = ((xe[i] + xe[i + 1]) / 2, g.y.1 + 6);
        let style = tick_style.pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(label.clone(), at, style)).drawn()?;
    }
    let every_y = ((18.0 / g.ch).ceil() as usize).max(1);
    for (j, label) in labels.y.1.iter().enumerate().step_by(every_y) {
        let at = (g.x.0 - 8, (ye[j] + ye[j + 1]) / 2);
        let style = tick_style.pos(Pos::new(HPos::Right, VPos::Center));
        area.draw(&Text::new(label.clone(), at, style)).drawn()?;
    }
    let desc_style = TextStyle::from((FONT, 15).into_font()).color(&BLACK);
    if labels.x_desc {
        let at = ((g.x.0 + g.x.1) / 2, h - 6);
        let style = desc_style.pos(Pos::new(HPos::Center, VPos::Bottom));
        area.draw(&Text::new(labels.x.0.to_string(), at, style))
            .drawn()?;
    }
    if labels.y_desc {
        let at = (10, (g.y.0 + g.y.1) / 2);
        let style = desc_style
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(labels.y.0.to_string(), at, style))
            .drawn()?;
    }
    Ok(())
}

/// The colour scale: a vertical bar from 0 % (bottom) to 100 % (top) with its ticks.
fn draw_legend<DB: DrawingBackend>(area: &Area<DB>, label: &str) -> Result<()> {
    let (_, h) = area.dim_in_pixel();
    let (x0, x1) = (14, 36);
    // At most 360 pixels tall: a scale, not a panel.
    let (y0, y1) = (60, (h as i32 - 60).clamp(120, 420));
    area.draw(&Text::new(
        label.to_string(),
        (x0 - 4, y0 - 30),
        TextStyle::from((FONT, 14).into_font()).color(&BLACK),
    ))
    .drawn()?;
    let span = y1 - y0;
    for step in 0..span {
        let t = 1.0 - f64::from(step) / f64::from(span - 1);
        area.draw(&Rectangle::new(
            [(x0, y0 + step), (x1, y0 + step + 1)],
            color_at(t).filled(),
        ))
        .drawn()?;
    }
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.mix(0.4)))
        .drawn()?;
    let tick_style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for pct in [0, 25, 50, 75, 100] {
        let y = y1 - (f64::from(span) * f64::from(pct) / 100.0).round() as i32;
        area.draw(&PathElement::new(vec![(x1, y), (x1 + 5, y)], BLACK))
            .drawn()?;
        area.draw(&Text::new(
            format!("{pct}"),
            (x1 + 8, y),
            tick_style.clone(),
        ))
        .drawn()?;
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
    fn a_cell_carries_its_interval() {
        // 0 and 1 recovered of 8: the Wilson bounds, worked by hand. At k = 0 the upper end
        // is z^2 / (n + z^2); at k = 1 the centre is (1/8 + z^2/16) / (1 + z^2/8).
        let z2 = 1.959_964_f64.powi(2);
        let (k0_upper, n) = (z2 / (8.0 + z2), 8.0);
        let centre = (1.0 / n + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half =
            1.959_964 / (1.0 + z2 / n) * ((1.0 / n) * (7.0 / n) / n + z2 / (4.0 * n * n)).sqrt();
        let recovery = |k: usize| {
            let (lower, upper) = crate::metrics::recovery::wilson_interval(k, 8);
            let m = Metrics {
                recovery: Some(crate::metrics::RecoveryMetrics {
                    recovered_fraction: k as f64 / 8.0,
                    recovered_fraction_lower: lower,
                    recovered_fraction_upper: upper,
                    ..Default::default()
                }),
                ..Metrics::default()
            };
            RECOVERED.cell(&m, &Metrics::default())
        };
        let none = recovery(0);
        assert_eq!((none.mean, none.lower), (0.0, 0.0));
        assert!((none.upper - k0_upper).abs() < 1e-6, "{none:?}");
        assert_eq!(none.range(), "0\u{2013}33");
        let one = recovery(1);
        assert!((one.lower - (centre - half)).abs() < 1e-6, "{one:?}");
        assert!((one.upper - (centre + half)).abs() < 1e-6, "{one:?}");
        assert_eq!(recovery(8).range(), "67\u{2013}100");
        // The success rate's interval is the mean's t interval, kept within 0-100 %.
        let success = |rate: f64, half: f64| {
            let m = Metrics {
                success_rate: rate,
                ..Metrics::default()
            };
            let ci = Metrics {
                success_rate: half,
                ..Metrics::default()
            };
            SUCCESS.cell(&m, &ci)
        };
        let c = success(0.98, 0.05);
        assert_eq!((c.lower, c.upper), (0.98 - 0.05, 1.0));
        assert_eq!(success(0.5, 0.1).range(), "40\u{2013}60");
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
