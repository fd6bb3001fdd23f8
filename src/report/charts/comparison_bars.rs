//! Headline metrics side by side: a panel per metric, a bar per variant with its 95 %
//! confidence interval as an error bar. Shares sit on a fixed 0-100 % axis; every latency bar
//! carries the share of the variant's requests that failed, and the latency of answers of a
//! variant that failed most of its requests is drawn hatched, so that a collapse never reads
//! as speed. The two latency panels share one axis, logarithmic where their values span more
//! than 1.5 decades. A variant whose replications split between recovering and staying
//! collapsed says so over its bars. Panels of a policy's counts appear only where some variant
//! has the policy. The figure grows wider rather than taller than three rows of panels.

use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{self, Area, Drawn};
use super::over_time::YAxis;
use super::style::{FONT, variant_color};
use super::sweep_curves::{Points, YScale};
use super::{Chart, Run, SIZE, Table, triggers};
use crate::metrics::Metric;
use crate::report::shape;

/// A variant that failed more than this share of its requests (in %) is drawn hatched in the
/// latency of answers: its few answers came before the collapse.
const COLLAPSED: f64 = 50.0;

/// The counts that are a policy's point, each with a panel when some variant can make it.
const POLICY_PANELS: [Metric; 8] = [
    Metric::DUPLICATES,
    Metric::HEDGES,
    Metric::SHED,
    Metric::THROTTLED,
    Metric::FAILED_THROTTLED_LOCALLY,
    Metric::FAILED_BULKHEAD_FULL,
    Metric::BUDGET_DENIALS,
    Metric::BREAKER_REFUSALS,
];

/// Pixels of one row of panels.
const ROW: u32 = 290;
/// Pixels of the title band.
const TITLE: u32 = 44;
/// Pixels of the band that explains the hatched bars, when some bar is hatched.
const NOTE: u32 = 26;
/// Font size of the labels over the bars.
const LABEL_FONT: u32 = 12;
/// The most rows of panels before the figure grows wider instead.
const MOST_ROWS: usize = 3;
/// The widest the figure grows, in pixels.
const MAX_WIDTH: u32 = 1600;

/// The comparison figure.
pub struct ComparisonBars;

/// How a panel is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A share of requests, in %, on a fixed 0-100 axis, each bar labelled with its value.
    Share,
    /// A latency, each bar labelled with the variant's failure share; `answers` when it
    /// counts only requests that got an answer, whose bars are hatched for a collapsed
    /// variant.
    Latency {
        /// Whether failed requests are left out of the latency.
        answers: bool,
    },
    /// Anything else: work, amplification, completion, a policy's count.
    Plain,
}

/// One variant's bar in a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The variant's name.
    pub variant: String,
    /// (mean, 95 % half-width), `None` where the metric does not apply (latency of answers
    /// where nothing was answered, a count of a policy the variant does not have).
    pub value: Option<(f64, f64)>,
    /// In a latency panel, the share of the variant's requests that failed, in %, with its
    /// 95 % half-width.
    pub failed: Option<(f64, f64)>,
}

/// One panel: its title, how it is drawn and a bar per variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The metric's title with its unit.
    pub title: String,
    /// How it is drawn.
    pub kind: Kind,
    /// A bar per variant, in file order.
    pub bars: Vec<Bar>,
}

/// Every panel, in the order drawn (left to right, then top to bottom).
pub struct Bars(Vec<Panel>);

impl Bars {
    /// Each panel's axis, linear up to [`axis_top`], except that the latency panels share
    /// one (the latency of answers and of all requests are read against each other), which is
    /// logarithmic where their values span more than 1.5 decades ([`YScale`]'s rule, as in
    /// the sweep curves): 12 ms beside 1000 ms would otherwise sit on the floor.
    pub fn axes(&self) -> Vec<YAxis> {
        let is_latency = |p: &&Panel| matches!(p.kind, Kind::Latency { .. });
        let latency = || self.0.iter().filter(is_latency);
        let values: Points = latency()
            .flat_map(|p| p.bars.iter().map(|b| vec![b.value]))
            .collect();
        let y = YScale::of(&values);
        let shared = if y.log {
            // The foot is the power of ten at least half a decade under the least bar, so the
            // shortest bar keeps a readable height (a foot just under it made aws's 2 s a
            // sliver beside 64 s); a quarter more above the tallest whisker for the labels.
            let least = values.iter().flatten().flatten().map(|(m, _)| *m);
            let least = least.filter(|m| *m > 0.0).fold(f64::INFINITY, f64::min);
            let lo = (least.log10() - 0.5).floor().min(y.lo);
            YAxis {
                log: true,
                lo,
                hi: y.hi + (y.hi - lo) * 0.25,
            }
        } else {
            YAxis::linear(latency().map(axis_top).fold(0.0, f64::max))
        };
        let axis = |p: &Panel| match is_latency(&p) {
            true => shared,
            false => YAxis::linear(axis_top(p)),
        };
        self.0.iter().map(axis).collect()
    }

    /// Whether some bar is drawn hatched: a collapsed variant's latency of answers.
    fn any_collapsed(&self) -> bool {
        self.0
            .iter()
            .any(|p| p.bars.iter().any(|b| collapsed(p, b)))
    }
}

impl Table for Bars {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        w.write_record(["panel", "variant", "mean", "ci95", "failed_percent"])?;
        let text = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
        for panel in &self.0 {
            for bar in &panel.bars {
                w.write_record([
                    panel.title.as_str(),
                    &bar.variant,
                    &text(bar.value.map(|v| v.0)),
                    &text(bar.value.map(|v| v.1)),
                    &text(bar.failed.map(|f| f.0)),
                ])?;
            }
        }
        Ok(())
    }
}

/// The top of a panel's axis: 100 for a share, else room above the highest whisker (and, in
/// a latency panel, for the labels over the bars); 1 for a panel of zeros.
pub fn axis_top(panel: &Panel) -> f64 {
    let room = match panel.kind {
        Kind::Share => return 100.0,
        Kind::Latency { .. } => 1.3,
        Kind::Plain => 1.12,
    };
    let top = panel
        .bars
        .iter()
        .filter_map(|b| b.value.map(|(m, h)| m + h))
        .fold(0.0, f64::max);
    if top > 0.0 { top * room } else { 1.0 }
}

/// A share in % as the labels print it: whole percents, a decimal under 10 % (and just under
/// 100 %, which must not read as 100).
fn share_text(pct: f64) -> String {
    if pct > 0.0 && pct < 0.1 {
        "<0.1 %".to_string()
    } else if pct > 99.9 && pct < 100.0 {
        ">99.9 %".to_string()
    } else if pct > 99.0 && pct < 100.0 {
        format!("{:.1} %", (pct * 10.0).floor() / 10.0)
    } else if pct > 0.0 && pct < 10.0 {
        format!("{pct:.1} %")
    } else {
        format!("{pct:.0} %")
    }
}

/// Whether a bar of `panel` stands for a variant that failed most of its requests, in a
/// panel where that makes the bar misleading: the latency of answers.
fn collapsed(panel: &Panel, bar: &Bar) -> bool {
    panel.kind == Kind::Latency { answers: true } && failed_most(bar)
}

/// Whether the variant failed more than [`COLLAPSED`] % of its requests beyond doubt: its
/// 95 % interval lies above. retry-budget's variants fail 49.9-50.1 %, and a bare mean put
/// the hatch on some and not others by chance.
fn failed_most(bar: &Bar) -> bool {
    bar.failed.is_some_and(|(m, h)| m - h > COLLAPSED)
}

/// `text` at the largest size from [`LABEL_FONT`] down to 9 that fits `width` pixels, or
/// without its " %" at 9 when none does.
fn fit(text: &str, width: u32) -> (String, u32) {
    (9..=LABEL_FONT)
        .rev()
        .find(|&size| canvas::text_width(text, size) <= width)
        .map_or_else(
            || (text.trim_end_matches(" %").to_string(), 9),
            |size| (text.to_string(), size),
        )
}

/// Columns, rows and the figure's width for a grid of `panels` panels, each wide enough for
/// `variants` bars of 32 pixels with their labels, at most four across, the rows filled
/// evenly: [`SIZE`]'s width, or wider (up to [`MAX_WIDTH`]) where that would take more than
/// [`MOST_ROWS`] rows, so that no figure is taller than a screen.
fn grid(panels: usize, variants: usize) -> (usize, usize, u32) {
    let panels = panels.max(1);
    let fit = |width: u32| {
        let slot = |c: usize| (width as usize / c).saturating_sub(80) / variants.max(1);
        let most = (1..=4usize).rev().find(|&c| slot(c) >= 32).unwrap_or(1);
        most.min(panels)
    };
    let mut width = SIZE.0;
    if panels.div_ceil(fit(width)) > MOST_ROWS {
        let cols = panels.div_ceil(MOST_ROWS).min(4) as u32;
        width = (cols * (80 + 32 * variants.max(1) as u32)).clamp(SIZE.0, MAX_WIDTH);
    }
    let rows = panels.div_ceil(fit(width));
    (panels.div_ceil(rows), rows, width)
}

/// `text` on one line if it fits `slot` pixels at the label size, else broken at its first
/// space.
fn wrap(text: &str, slot: i32) -> Vec<String> {
    match text.split_once(' ') {
        Some((a, b)) if canvas::text_width(text, LABEL_FONT) as i32 + 4 > slot => {
            vec![a.to_string(), b.to_string()]
        }
        _ => vec![text.to_string()],
    }
}

/// Per variant whose replications split between recovering and staying collapsed, how many
/// recovered of how many, as the recovery analysis counts them.
fn splits(run: &Run) -> Vec<Option<(f64, f64)>> {
    let split = |v| triggers::split_counts(v).map(|(k, down)| (k, k + down));
    run.point().variants.iter().map(split).collect()
}

/// Whether some variant at the focus point failed a request.
fn any_failed(run: &Run) -> bool {
    let failed = |v: &&crate::metrics::VariantResult| Metric::FAILURE_RATE.get(&v.metrics);
    run.point()
        .variants
        .iter()
        .any(|v| failed(&v).is_some_and(|f| f > 0.0))
}

impl ComparisonBars {
    /// The panels a run gets, with their metrics and kinds.
    fn panels(run: &Run) -> Vec<(Metric, Kind)> {
        let ran = run.ran();
        let mut panels = vec![
            (Metric::SUCCESS_RATE, Kind::Share),
            (Metric::FAILURE_RATE, Kind::Share),
        ];
        if ran.iter().any(|v| shape::can_degrade(&v.scenario)) {
            panels.insert(1, (Metric::DEGRADED_RATE, Kind::Share));
        }
        panels.push((Metric::SUCCESS_P99, Kind::Latency { answers: true }));
        // Where no request failed, the latency of all requests is that of the answers.
        if any_failed(run) {
            panels.push((Metric::LATENCY_P99, Kind::Latency { answers: false }));
        }
        panels.extend([
            (Metric::ATTEMPTS, Kind::Plain),
            (Metric::AMPLIFICATION, Kind::Plain),
            (Metric::COMPLETION, Kind::Plain),
        ]);
        for k in POLICY_PANELS {
            if ran.iter().any(|v| crate::report::produces(&k, &v.scenario)) {
                panels.push((k, Kind::Plain));
            }
        }
        panels
    }

    /// The legend's keys: the variants, with how many replications recovered where they
    /// split.
    fn keys(run: &Run) -> Vec<canvas::Key> {
        let mut keys = canvas::variant_keys(&run.point().variants, false);
        for (key, split) in keys.iter_mut().zip(splits(run)) {
            if let Some((k, n)) = split {
                key.label += &format!(" (split: {k:.0} of {n:.0} recovered)");
            }
        }
        keys
    }
}

impl Chart for ComparisonBars {
    type Table = Bars;

    fn stem(&self) -> &'static str {
        "comparison"
    }

    fn caption(&self, run: &Run) -> String {
        let mut text = String::from(if run.experiment.replications > 1 {
            "The headline numbers side by side; a bar's whisker is its 95 % confidence interval."
        } else {
            "The headline numbers side by side (one replication: no intervals)."
        });
        text.push_str(" Shares of requests are on a fixed 0-100 % axis.");
        if any_failed(run) {
            text.push_str(" Latency is shown twice, on one axis, each bar labelled with the share of the variant's requests that failed: of answers, which leaves failed requests out, and of all requests, which counts a failure at the time it gave up.");
        } else {
            text.push_str(" No variant failed a request, so the latency of answers is that of all requests: one panel.");
        }
        let bars = self.table(run).ok();
        if bars
            .as_ref()
            .is_some_and(|b| b.axes().iter().any(|a| a.log))
        {
            text.push_str(
                " The latency axis is logarithmic: the latencies span more than 1.5 decades.",
            );
        }
        if bars.is_some_and(|b| b.any_collapsed()) {
            text.push_str(" A variant that failed more than half its requests (its 95 % interval above 50 %) is hatched and pale in the latency of answers: it answered few requests, often only those before the collapse, so a short bar there is no sign of speed.");
        }
        if splits(run).iter().any(Option::is_some) {
            text.push_str(" A variant whose replications split between recovering and staying collapsed says so over its bars and in the legend (split 8/20: 8 of 20 recovered): its bars are means over two outcomes, and no single run looks like them.");
        }
        if run.ran().iter().any(|v| shape::can_degrade(&v.scenario)) {
            text.push_str(" A request a fallback answered is degraded: neither a success nor a failure, and its answer counts in the latency of answers.");
            if ComparisonBars::panels(run).contains(&(Metric::FAILED_BULKHEAD_FULL, Kind::Plain)) {
                text.push_str(" \"failed: bulkhead full\" counts requests that failed so: a refusal a fallback answered is degraded instead, so a variant with a fallback shows few or none there; the per-call table in report.md (bulkhead full) counts every refusal.");
            }
        }
        if ComparisonBars::panels(run)
            .iter()
            .any(|(k, _)| POLICY_PANELS.contains(k))
        {
            text.push_str(" A policy's count gets a panel when some variant has the policy; a variant without it shows n/a.");
        }
        if run.ran().iter().any(|v| shape::has_calls(&v.scenario)) {
            text.push_str(" In this call graph, work and amplification count the attempts at the entry service only: the services behind it are in the per-service table, call-graph and service-load-over-time.");
        }
        text
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        let panels = ComparisonBars::panels(run);
        let (_, rows, width) = grid(panels.len(), run.point().variants.len());
        // The band that explains hatched bars is there only when some bar is hatched.
        let note = self
            .table(run)
            .map_or(NOTE, |t| if t.any_collapsed() { NOTE } else { 0 });
        let head = TITLE + canvas::legend_height(&ComparisonBars::keys(run), width) + note;
        (width, head + rows as u32 * ROW)
    }

    fn table(&self, run: &Run) -> Result<Bars> {
        let degrade = run.ran().iter().any(|v| shape::can_degrade(&v.scenario));
        let variants = &run.point().variants;
        let ran = run.ran();
        let failures = any_failed(run);
        let panel = |(k, kind): (Metric, Kind)| {
            let bars = variants
                .iter()
                .zip(ran)
                .map(|(v, scenario)| {
                    // A count of a policy the variant does not have, or a degraded share
                    // where nothing can answer degraded, does not apply: n/a, not 0.
                    let applies = if POLICY_PANELS.contains(&k) {
                        crate::report::produces(&k, &scenario.scenario)
                    } else {
                        k != Metric::DEGRADED_RATE || shape::can_degrade(&scenario.scenario)
                    };
                    Bar {
                        variant: v.name.clone(),
                        value: k.estimate(&v.metrics, &v.ci95).filter(|_| applies),
                        // Labelled with its failure share where some variant failed.
                        failed: (matches!(kind, Kind::Latency { .. }) && failures)
                            .then(|| Metric::FAILURE_RATE.estimate(&v.metrics, &v.ci95))
                            .flatten(),
                    }
                })
                .collect();
            Panel {
                title: super::metric_title(&k, degrade),
                kind,
                bars,
            }
        };
        Ok(Bars(
            ComparisonBars::panels(run).into_iter().map(panel).collect(),
        ))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Bars, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        // Whiskers only exist with two replications or more; the title says so only then.
        let whiskers = if run.experiment.replications > 1 {
            " (whiskers: 95 % intervals)"
        } else {
            " (1 replication: no intervals)"
        };
        let truncated = variants.iter().any(|v| v.is_truncated());
        let title = format!(
            "{}: variants compared{}{whiskers}{}",
            run.name(),
            run.at(),
            if truncated {
                "; pale bars: truncated, cut short by a limit"
            } else {
                ""
            }
        );
        let body = canvas::titled(root, &title, TITLE, 20)?;
        let below = canvas::legend(&body, &ComparisonBars::keys(run))?;
        let panels = if table.any_collapsed() {
            let (note, panels) = below.split_vertically(NOTE);
            draw_note(&note)?;
            panels
        } else {
            below
        };
        let (cols, rows, _) = grid(table.0.len(), variants.len());
        let areas = panels.split_evenly((rows, cols));
        let cut: Vec<bool> = variants.iter().map(|v| v.is_truncated()).collect();
        let words = |s: Option<(f64, f64)>| s.map(|(k, n)| format!("split {k:.0}/{n:.0}"));
        let split: Vec<Option<String>> = splits(run).into_iter().map(words).collect();
        for ((panel, axis), area) in table.0.iter().zip(table.axes()).zip(&areas) {
            draw_panel(area, panel, &axis, (&cut, &split))?;
        }
        Ok(())
    }
}

/// The band under the legend that says what a hatched bar is.
fn draw_note<DB: DrawingBackend>(area: &Area<DB>) -> Result<()> {
    let grey = RGBColor(90, 90, 90);
    let (x0, y0, x1, y1) = (16, 4, 38, 19);
    area.draw(&Rectangle::new(
        [(x0, y0), (x1, y1)],
        grey.mix(0.25).filled(),
    ))
    .drawn()?;
    hatch(area, (x0, y0, x1, y1), grey)?;
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], grey.stroke_width(1)))
        .drawn()?;
    let text = format!(
        "hatched: failed more than {COLLAPSED:.0} % of its requests (95 % interval above); its latency of answers counts only the few it answered"
    );
    area.draw(&Text::new(text, (x1 + 10, y0), (FONT, 14)))
        .drawn()?;
    Ok(())
}

/// Diagonal lines across the pixel rectangle (x0, y0, x1, y1) of `area`.
fn hatch<DB: DrawingBackend>(
    area: &Area<DB>,
    (x0, y0, x1, y1): (i32, i32, i32, i32),
    color: RGBColor,
) -> Result<()> {
    // Lines x + y = c, which rise to the right; each is cut to the rectangle.
    let mut c = x0 + y0 + 4;
    while c < x1 + y1 {
        let start = x0.max(c - y1);
        let end = x1.min(c - y0);
        if start < end {
            area.draw(&PathElement::new(
                vec![(start, c - start), (end, c - end)],
                color.stroke_width(2),
            ))
            .drawn()?;
        }
        c += 8;
    }
    Ok(())
}

/// One metric's panel on `axis`: a bar per variant (pale with a border where `cut`,
/// truncated; pale, hatched and bordered where collapsed), with its whisker and, for shares
/// and latencies, its label and the note of a variant whose replications `split`.
fn draw_panel<DB: DrawingBackend>(
    area: &Area<DB>,
    panel: &Panel,
    axis: &YAxis,
    (cut, split): (&[bool], &[Option<String>]),
) -> Result<()> {
    let bars = &panel.bars;
    let y_ticks = axis.ticks();
    // "p99 latency, all (ms, log scale)".
    // Only latency panels, "... (ms)", are ever logarithmic.
    let title = match panel.title.strip_suffix(')') {
        Some(head) if axis.log => format!("{head}, log scale)"),
        _ => panel.title.clone(),
    };
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .caption(&title, (FONT, 15))
        .x_label_area_size(8)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..bars.len() as f64, super::style::span(axis.lo, axis.hi))
        .drawn()?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_labels(6)
        .y_label_formatter(&y_ticks)
        .label_style((FONT, 13))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .drawn()?;
    // The width of one variant's slot in pixels decides whether a label takes one line or two.
    let slot = (chart.backend_coord(&(1.0, 0.0)).0 - chart.backend_coord(&(0.0, 0.0)).0).max(1);
    for (j, bar) in bars.iter().enumerate() {
        draw_bar(&mut chart, area, panel, (j, bar), axis, cut[j])?;
        let split = split.get(j).and_then(Option::as_deref);
        draw_label(&mut chart, panel, (j, bar), axis, (slot, split))?;
    }
    Ok(())
}

/// The axes of a panel.
type Bars2d<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Bar `j` of `panel` from the foot of `axis`: filled, pale with a border where `cut`
/// (truncated) or collapsed, hatched where collapsed, with its whisker.
fn draw_bar<DB: DrawingBackend>(
    chart: &mut Bars2d<'_, DB>,
    area: &Area<DB>,
    panel: &Panel,
    (j, bar): (usize, &Bar),
    axis: &YAxis,
    cut: bool,
) -> Result<()> {
    let base = area.get_base_pixel();
    let color = variant_color(j);
    let (mean, half) = bar.value.unwrap_or((0.0, 0.0));
    let corners = [
        (j as f64 + 0.15, axis.lo),
        (j as f64 + 0.85, axis.at(mean).min(axis.hi)),
    ];
    let down = collapsed(panel, bar);
    // A truncated or collapsed variant's bar is pale with a border; a collapsed one is
    // hatched as well.
    let fill = if cut || down {
        color.mix(0.3).filled()
    } else {
        color.filled()
    };
    let mut shapes = vec![Rectangle::new(corners, fill)];
    if cut || down {
        shapes.push(Rectangle::new(corners, color.stroke_width(2)));
    }
    chart.draw_series(shapes).drawn()?;
    if down && mean > 0.0 {
        let (a, b) = (
            chart.backend_coord(&corners[0]),
            chart.backend_coord(&corners[1]),
        );
        let rect = (a.0 - base.0, b.1 - base.1, b.0 - base.0, a.1 - base.1);
        hatch(area, rect, color)?;
    }
    if half > 0.0 {
        // A whisker with caps; no marker, which would hide a short interval.
        let (xm, lo, hi) = (
            j as f64 + 0.5,
            axis.at((mean - half).max(0.0)),
            axis.at(mean + half).min(axis.hi),
        );
        let (c0, c1) = (j as f64 + 0.38, j as f64 + 0.62);
        let whisker = [
            vec![(xm, lo), (xm, hi)],
            vec![(c0, lo), (c1, lo)],
            vec![(c0, hi), (c1, hi)],
        ];
        chart
            .draw_series(
                whisker
                    .into_iter()
                    .map(|line| PathElement::new(line, BLACK.stroke_width(2))),
            )
            .drawn()?;
    }
    Ok(())
}

/// The label of bar `j` of `panel`: its share, or the variant's failure share over a
/// latency where some variant failed, over the bar (inside it, in white, for a share near the top), under the note of
/// a variant whose replications `split`; `slot` is the pixel width of one variant's place.
fn draw_label<DB: DrawingBackend>(
    chart: &mut Bars2d<'_, DB>,
    panel: &Panel,
    (j, bar): (usize, &Bar),
    axis: &YAxis,
    (slot, split): (i32, Option<&str>),
) -> Result<()> {
    let (mean, half) = bar.value.unwrap_or((0.0, 0.0));
    // What a bar's label says: its share, or the variant's failure share over a latency;
    // "n/a" where the metric does not apply, "0" where a plain bar has no height.
    let mut lines: Vec<String> = match (panel.kind, bar.value) {
        (Kind::Latency { .. }, value) => {
            // No failure share where no variant failed (the panel's bars carry none).
            let fails = bar.failed.map(|(f, _)| format!("fails {}", share_text(f)));
            let mut lines = if value.is_none() {
                vec!["n/a".to_string()]
            } else {
                Vec::new()
            };
            lines.extend(fails.iter().flat_map(|f| wrap(f, slot)));
            lines
        }
        (Kind::Share, Some((m, _))) => vec![share_text(m)],
        (_, None) => vec!["n/a".to_string()],
        (Kind::Plain, Some((0.0, _))) => vec!["0".to_string()],
        (Kind::Plain, Some(_)) => Vec::new(),
    };
    let alarm = failed_most(bar);
    let ink = if alarm {
        RGBColor(180, 0, 0)
    } else {
        RGBColor(40, 40, 40)
    };
    let font = if alarm {
        (FONT, LABEL_FONT).into_font().style(FontStyle::Bold)
    } else {
        (FONT, LABEL_FONT).into_font()
    };
    let style = TextStyle::from(font)
        .color(&ink)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    // A label stands over the bar's whisker; a share near the top of its 0-100 axis has
    // no room there and is written inside the bar, in white, under the whisker.
    let above = axis.at(mean + half).min(axis.hi);
    if panel.kind == Kind::Share && above > 0.85 * axis.hi {
        // Inside, the label must fit the bar: a smaller size, or the number alone.
        let (text, size) = fit(&lines.join(" "), (slot as f64 * 0.7) as u32);
        let white = TextStyle::from((FONT, size).into_font())
            .color(&WHITE)
            .pos(Pos::new(HPos::Center, VPos::Top));
        // Below the whisker's lower end, so the two never cross.
        let under = axis.at((mean - half).max(0.0)).min(axis.hi);
        let label = EmptyElement::at((j as f64 + 0.5, under)) + Text::new(text, (0, 4), white);
        chart.draw_series(std::iter::once(label)).drawn()?;
        lines.clear();
    }
    // The note of a split variant stands over the shares and latencies.
    if let (Some(split), Kind::Share | Kind::Latency { .. }) = (split, panel.kind) {
        lines.splice(0..0, wrap(split, slot));
    }
    let line = LABEL_FONT as i32 + 2;
    for (i, text) in lines.into_iter().rev().enumerate() {
        let at = EmptyElement::at((j as f64 + 0.5, above));
        let label = at + Text::new(text, (0, -3 - line * i as i32), style.clone());
        chart.draw_series(std::iter::once(label)).drawn()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::charts::{Figure, ImageFormat};
    use crate::scenario::{LoadOptions, load_str};

    /// A single server that stalls from 0.5 s to the end for "stall" (it collapses: most
    /// requests fail, and its few successes came before the stall), not for "healthy"; and
    /// "stall, budget" with a retry budget.
    const STALL: &str = r#"{"name": "c", "seed": 3, "replications": 2, "duration": "4s",
      "clients": {"count": 20, "workload": {"open": {"rate_per_s": 50}}},
      "server": {"concurrency": 2, "service_time": {"constant": "5ms"},
                 "faults": [{"from": "500ms", "to": "4s", "concurrency": 0}]},
      "policy": {"timeout": "100ms", "retry": {"max_attempts": 2}},
      "variants": [
        {"name": "stall", "patch": {}},
        {"name": "healthy", "patch": {"server": {"faults": []}}},
        {"name": "stall, budget", "patch": {"policy": {"budget": {"ratio": {"percent": 0.1}}}}}
      ]}"#;

    /// A service a calling b, which stalls from 0.5 s to 1.5 s; `fallback` gives a -> b a
    /// fallback in the second variant.
    fn graph(fallback: bool) -> String {
        let second = if fallback {
            r#"{"timeout": "50ms", "fallback": {}}"#
        } else {
            r#"{"timeout": "60ms"}"#
        };
        format!(
            r#"{{"name": "g", "seed": 1, "replications": 2, "duration": "2s",
          "clients": {{"count": 10, "workload": {{"open": {{"rate_per_s": 50}}}}, "entry": "a"}},
          "policy": {{"timeout": "200ms", "retry": {{"max_attempts": 2}}}},
          "services": {{
            "a": {{"concurrency": 4, "service_time": {{"constant": "1ms"}},
                  "calls": [{{"to": "b", "policy": {{"timeout": "50ms"}}}}]}},
            "b": {{"concurrency": 1, "service_time": {{"constant": "1ms"}},
                  "faults": [{{"from": "500ms", "to": "1500ms", "concurrency": 0}}]}}
          }},
          "variants": [
            {{"name": "plain", "patch": {{}}}},
            {{"name": "second", "patch": {{"services": {{"a": {{"calls": [{{"to": "b", "policy": {second}}}]}}}}}}}}
          ]}}"#
        )
    }

    /// The comparison figure of `text`: its panels' titles, its CSV's records and the image.
    fn render(text: &str) -> (Vec<String>, Vec<Vec<String>>, image::DynamicImage) {
        let experiment = load_str(text, "t", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        let titles = ComparisonBars
            .table(&run)
            .unwrap()
            .0
            .into_iter()
            .map(|p| p.title)
            .collect();
        let figure = Figure::render(&ComparisonBars, &run, ImageFormat::Png).unwrap();
        let mut reader = csv::Reader::from_reader(figure.csv.as_slice());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(
            header,
            ["panel", "variant", "mean", "ci95", "failed_percent"]
        );
        let records = reader
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        (
            titles,
            records,
            image::load_from_memory(&figure.image).unwrap(),
        )
    }

    /// The record of `panel` and `variant`.
    fn cell<'a>(records: &'a [Vec<String>], panel: &str, variant: &str) -> &'a [String] {
        records
            .iter()
            .find(|r| r[0] == panel && r[1] == variant)
            .unwrap_or_else(|| panic!("no {panel} / {variant} in {records:?}"))
    }

    /// aws-backoff-jitter fails no request: its two latency panels were the same twice over,
    /// each bar labelled "fails 0 %". One panel, no failure labels, and the caption says why.
    #[test]
    fn without_failures_the_latency_is_one_panel() {
        let healthy = STALL.replace(
            r#""faults": [{"from": "500ms", "to": "4s", "concurrency": 0}]"#,
            r#""faults": []"#,
        );
        let (titles, records, _) = render(&healthy);
        assert!(
            titles.iter().any(|t| t.starts_with("p99 success latency")),
            "{titles:?}"
        );
        assert!(
            !titles.iter().any(|t| t.starts_with("p99 latency, all")),
            "{titles:?}"
        );
        let latency = cell(&records, &titles[2], "stall");
        assert_eq!(latency[4], "", "no failure share to label: {latency:?}");
        let experiment = load_str(&healthy, "t", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        assert!(ComparisonBars.caption(&run).contains("one panel"));
        let (titles, _, _) = render(STALL);
        assert!(
            titles.iter().any(|t| t.starts_with("p99 latency, all")),
            "{titles:?}"
        );
    }

    /// retry-budget's variants all fail 50 % give or take 0.1: none is hatched, where a bare
    /// mean hatched five of six by chance; a failure share whose interval lies above is.
    #[test]
    fn only_a_failure_share_above_half_beyond_doubt_is_hatched() {
        let bar = |failed| Bar {
            variant: "v".to_string(),
            value: Some((10.0, 1.0)),
            failed: Some(failed),
        };
        assert!(!failed_most(&bar((50.1, 0.3))));
        assert!(!failed_most(&bar((49.9, 0.3))));
        assert!(failed_most(&bar((50.5, 0.3))));
        assert!(failed_most(&bar((97.0, 0.0))));
    }

    /// The latency of answers ranked a collapsed variant fastest with no mark: its table
    /// carries each latency bar's failure share, and the latency of all requests beside it.
    #[test]
    fn a_collapsed_variants_latency_carries_its_failure_share() {
        let (titles, records, png) = render(STALL);
        assert!(
            titles.contains(&"p99 success latency (ms)".to_string()),
            "{titles:?}"
        );
        assert!(
            titles.contains(&"p99 latency, all (ms)".to_string()),
            "{titles:?}"
        );
        let num = |r: &[String], i: usize| r[i].parse::<f64>().unwrap();
        let failed = num(cell(&records, "failed (%)", "stall"), 2);
        assert!(failed > COLLAPSED, "the stall collapses: {failed}");
        for panel in ["p99 success latency (ms)", "p99 latency, all (ms)"] {
            for variant in ["stall", "healthy"] {
                let share = num(cell(&records, panel, variant), 4);
                let rate = num(cell(&records, "failed (%)", variant), 2);
                assert_eq!(share, rate, "{panel} / {variant}");
            }
        }
        // Counting failures at the time they gave up, the collapsed variant is the slow one.
        let all = |v: &str| num(cell(&records, "p99 latency, all (ms)", v), 2);
        assert!(all("stall") > all("healthy"));
        // Shares and counts carry no failure share.
        assert_eq!(cell(&records, "success (%)", "stall")[4], "");
        assert!(png.width() >= 1000);
    }

    #[test]
    fn shares_are_drawn_on_a_fixed_0_to_100_axis() {
        let panel = |kind, mean| Panel {
            title: "t".to_string(),
            kind,
            bars: vec![Bar {
                variant: "v".to_string(),
                value: Some((mean, 0.5)),
                failed: None,
            }],
        };
        assert_eq!(axis_top(&panel(Kind::Share, 9.9)), 100.0);
        assert_eq!(axis_top(&panel(Kind::Share, 0.0)), 100.0);
        assert!((axis_top(&panel(Kind::Plain, 9.5)) - 11.2).abs() < 1e-9);
        let latency = axis_top(&panel(Kind::Latency { answers: true }, 9.5));
        assert!(latency > 11.2, "room for the failure labels: {latency}");
        let empty = Panel {
            bars: Vec::new(),
            ..panel(Kind::Plain, 0.0)
        };
        assert_eq!(
            axis_top(&empty),
            1.0,
            "a panel of nothing still gets an axis"
        );
    }

    /// tail-at-scale: no hedging about 1000 ms against 12 ms hedged, whose bars sat on the
    /// floor of a linear axis.
    #[test]
    fn the_two_latency_panels_share_their_axis_a_log_one_across_decades() {
        let panel = |kind, mean| Panel {
            title: "t".to_string(),
            kind,
            bars: vec![Bar {
                variant: "v".to_string(),
                value: Some((mean, 0.0)),
                failed: Some((10.0, 0.0)),
            }],
        };
        let bars = |answers: f64, all: f64| {
            Bars(vec![
                panel(Kind::Share, 40.0),
                panel(Kind::Latency { answers: true }, answers),
                panel(Kind::Latency { answers: false }, all),
                panel(Kind::Plain, 5.0),
            ])
        };
        let close = bars(600.0, 2000.0);
        let axes = close.axes();
        assert_eq!(axes[1], axes[2], "answers and all on one axis");
        assert_eq!(axes[2], YAxis::linear(axis_top(&close.0[2])));
        assert_eq!(axes[0], YAxis::linear(100.0));
        assert_eq!(axes[3], YAxis::linear(axis_top(&close.0[3])));
        // 12 ms beside 1000 ms: more than 1.5 decades, a log axis for both latency panels.
        let apart = bars(12.0, 1000.0).axes();
        assert_eq!(apart[1], apart[2]);
        assert!(apart[1].log && !apart[0].log && !apart[3].log);
        assert!(apart[1].at(12.0) > apart[1].lo && apart[1].at(1000.0) < apart[1].hi);
        assert!(apart[1].lo <= 12f64.log10() && apart[1].hi >= 3.0);
        assert_eq!(
            apart[1].lo, 0.0,
            "a whole power of ten half a decade under 12 ms"
        );
        let aws = bars(2000.0, 64000.0).axes();
        assert!(
            aws[1].at(2000.0) - aws[1].lo >= 0.5,
            "the shortest bar stands at least half a decade"
        );
        assert_eq!(
            apart[1].at(0.0),
            apart[1].lo,
            "nothing falls below the foot"
        );
    }

    /// hotos-metastable's drop-outage bars (41.8 ± 22.2 % success) carried no mark of the
    /// 8 of 20 replications that recovered: the legend and the caption say it now.
    #[test]
    fn a_split_variant_says_how_many_replications_recovered() {
        let experiment = load_str(STALL, "t", &LoadOptions::default()).unwrap();
        let mut result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        assert!(splits(&run).iter().all(Option::is_none));
        assert!(!ComparisonBars.caption(&run).contains("split"));
        result.points[0].variants[0].metrics.recovery = Some(crate::metrics::RecoveryMetrics {
            recovered: 1.0,
            replications: 2.0,
            ..Default::default()
        });
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        assert_eq!(splits(&run)[0], Some((1.0, 2.0)));
        let keys = ComparisonBars::keys(&run);
        assert_eq!(keys[0].label, "stall (split: 1 of 2 recovered)");
        assert_eq!(keys[1].label, "healthy");
        assert!(
            ComparisonBars
                .caption(&run)
                .contains("split 8/20: 8 of 20 recovered")
        );
    }

    #[test]
    fn degraded_and_failed_panels_come_with_a_fallback() {
        let (titles, records, _) = render(&graph(true));
        assert!(titles.contains(&"degraded (%)".to_string()), "{titles:?}");
        assert!(titles.contains(&"failed (%)".to_string()), "{titles:?}");
        assert!(
            titles.contains(&"p99 latency of answers (ms)".to_string()),
            "{titles:?}"
        );
        // A variant without a fallback cannot answer degraded: n/a, not 0.
        assert_eq!(cell(&records, "degraded (%)", "plain")[2], "");
        let degraded = cell(&records, "degraded (%)", "second")[2].parse::<f64>();
        assert!(degraded.unwrap() > 0.0);
        let (titles, _, _) = render(&graph(false));
        assert!(
            !titles.iter().any(|t| t.starts_with("degraded")),
            "{titles:?}"
        );
        assert!(titles.contains(&"failed (%)".to_string()), "{titles:?}");
        assert!(
            titles.contains(&"p99 success latency (ms)".to_string()),
            "{titles:?}"
        );
    }

    #[test]
    fn a_policy_panel_appears_only_where_some_variant_has_the_policy() {
        let (titles, records, _) = render(STALL);
        assert!(titles.contains(&"budget denials".to_string()), "{titles:?}");
        for absent in ["hedges", "shed", "breaker refusals", "duplicate executions"] {
            assert!(
                !titles.contains(&absent.to_string()),
                "{absent}: {titles:?}"
            );
        }
        // A variant without a budget has no denials to count: n/a, not 0.
        assert_eq!(cell(&records, "budget denials", "stall")[2], "");
        assert!(!cell(&records, "budget denials", "stall, budget")[2].is_empty());
        let (titles, _, _) = render(&graph(true));
        assert!(
            !titles.contains(&"budget denials".to_string()),
            "{titles:?}"
        );
    }

    #[test]
    fn panels_wrap_into_rows_that_keep_each_bar_readable() {
        assert_eq!(grid(5, 3), (3, 2, 1000));
        assert_eq!(grid(7, 3), (4, 2, 1000));
        assert_eq!(grid(8, 5), (4, 2, 1000));
        assert_eq!(grid(1, 1), (1, 1, 1000));
        // hotos-metastable's ten panels of ten variants took five rows (1572 pixels): three
        // rows now, in a wider figure.
        assert_eq!(grid(10, 10), (4, 3, 1600));
        assert_eq!(grid(10, 20), (2, 5, 1600), "no wider than 1600 pixels");
    }
}
