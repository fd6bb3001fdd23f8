//! Figures: each kind of chart is one file here plus one [`Chart`] variant. A chart turns
//! results into an image (PNG or SVG) and the CSV of exactly the data it plots; it never
//! writes files itself.
//!
//! Text is drawn with the DejaVu Sans font compiled into the binary, so figures look the same
//! on every machine and need no fonts from the operating system. A variant keeps one colour in
//! every figure of a run.

mod call_graph;
mod comparison_bars;
mod latency_cdf;
mod latency_histogram;
mod load_over_time;
mod over_time;
mod phase_diagram;
mod policy_over_time;
mod replications;
mod server_over_time;
mod service_load;
mod style;
mod sweep_curves;
mod sweep_grid;
mod time_histogram;
mod triggers;

use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;

pub use phase_diagram::{PhaseMetric, phase_metric};
pub use style::{tick, variant_color};

use style::FONT;

use crate::metrics::{Column, Metric};
use crate::metrics::{ExperimentResult, VariantResult};
use crate::scenario::Experiment;

/// Image formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ImageFormat {
    /// Portable Network Graphics.
    #[default]
    Png,
    /// Scalable Vector Graphics.
    Svg,
}

impl ImageFormat {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Svg => "svg",
        }
    }
}

/// A rendered figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File stem: the image is `<stem>.png` (or `.svg`), its data `<stem>.csv`.
    pub stem: String,
    /// One line saying what to look at.
    pub caption: String,
    /// The encoded image.
    pub image: Vec<u8>,
    /// The plotted data.
    pub csv: Vec<u8>,
}

/// The kinds of chart.
#[derive(Debug, Clone)]
pub enum Chart {
    /// First attempts and retries stacked, goodput and queue length over time, per variant.
    LoadOverTime {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// Retry budgets' level and the share of circuit breakers open over time, with the
    /// retries sent, a panel per variant that has a budget or a breaker.
    PolicyOverTime {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// Every headline metric against the swept value, a small panel each.
    SweepGrid {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// The latency distribution per variant, with p50 and p99 marked.
    LatencyCdf {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// Work, amplification, success, p99 latency and completion time, a bar per variant.
    ComparisonBars {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// A metric against the swept value, a line per variant with its 95 % band.
    SweepCurve {
        /// File stem.
        stem: &'static str,
        /// The metric.
        metric: Metric,
        /// Axis label, with its unit.
        label: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// A metric over both axes of a two-axis sweep: a panel per variant, a coloured cell per
    /// (first, second) value pair.
    PhaseDiagram {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// The latency distribution per variant as a histogram on one log axis and one scale.
    LatencyHistogram {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// Workers busy and queue, and attempts ended by outcome, over time, a row per variant.
    ServerOverTime {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// A typical recovered and a typical collapsed run of each variant whose replications
    /// split.
    Replications {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// A call graph's attempts received per second, a panel per service, a line per variant.
    ServiceLoad {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// A call graph's services as boxes and calls as arrows labelled with attempts per
    /// logical request, a panel per variant.
    CallGraph {
        /// File stem.
        stem: &'static str,
        /// Caption.
        caption: &'static str,
    },
    /// A time-series column over time, one panel per variant (at the focus sweep value).
    TimeHistogram {
        /// File stem.
        stem: &'static str,
        /// The column.
        column: Column,
        /// What the column counts, for the axis.
        label: &'static str,
        /// Caption.
        caption: &'static str,
    },
}

/// The sweep point that figures of a single sweep value show, and the words that say which
/// (empty without a sweep).
fn focus_point<'a>(
    experiment: &Experiment,
    result: &'a ExperimentResult,
) -> (&'a crate::metrics::PointResult, String) {
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let point = &result.points[focus];
    let mut at = point
        .value
        .as_ref()
        .zip(experiment.sweep.as_ref())
        .map_or(String::new(), |(v, s)| {
            format!(" at {} = {v}", s.label.clone())
        });
    if let Some((y, second)) = experiment.points[focus]
        .second_value
        .as_ref()
        .zip(experiment.sweep.as_ref().and_then(|s| s.second.as_ref()))
    {
        at.push_str(&format!(", {} = {y}", second.label.clone()));
    }
    (point, at)
}

/// With a two-axis sweep, the words that say at which second-axis value the figures against
/// the first axis are drawn (` at P2 = y`); empty otherwise.
fn second_axis_at(experiment: &Experiment) -> String {
    experiment
        .sweep
        .as_ref()
        .and_then(|s| {
            let second = s.second.as_ref()?;
            Some(format!(
                " at {} = {}",
                second.label.clone(),
                second.values[second.focus()]
            ))
        })
        .unwrap_or_default()
}

/// Whether some replication of the variant stopped early at a limit (read from the summary's
/// `truncated` share, so a run read back from its folder is marked too).
pub fn is_truncated(v: &VariantResult) -> bool {
    v.is_truncated()
}

/// A variant's name as figures show it: with "(truncated)" when a limit cut it short.
pub fn display_name(v: &VariantResult) -> String {
    if is_truncated(v) {
        format!("{} (truncated)", v.name)
    } else {
        v.name.clone()
    }
}

/// What a legend entry's sample looks like.
#[derive(Debug, Clone, Copy)]
pub enum Mark {
    /// A filled square, as the variant's bars.
    Swatch,
    /// A pale square with a border: the bars of a truncated variant.
    PaleSwatch,
    /// A line in the dash pattern of the variant at this index.
    Line(usize),
}

/// A legend entry.
#[derive(Debug, Clone)]
pub struct Key {
    /// The words.
    pub label: String,
    /// The colour of the sample.
    pub color: RGBColor,
    /// The sample.
    pub mark: Mark,
}

const LEGEND_FONT: u32 = 15;
const LEGEND_ROW: u32 = 22;

/// One key per variant, in file order and colour; truncated variants say so and get a pale
/// swatch.
pub fn variant_keys(variants: &[VariantResult], line: bool) -> Vec<Key> {
    variants
        .iter()
        .enumerate()
        .map(|(j, v)| Key {
            label: display_name(v),
            color: variant_color(j),
            mark: match (line, is_truncated(v)) {
                (true, _) => Mark::Line(j),
                (false, true) => Mark::PaleSwatch,
                (false, false) => Mark::Swatch,
            },
        })
        .collect()
}

/// The width of `text` in pixels at `size`, measured with the compiled-in font.
pub fn text_width(text: &str, size: u32) -> u32 {
    style::register_fonts();
    (FONT, size)
        .into_font()
        .box_size(text)
        .map_or(text.len() as u32 * size / 2, |(w, _)| w)
}

/// The keys in rows that fit `width` pixels: (key, x) per row.
fn legend_rows(keys: &[Key], width: u32) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut x = 16;
    for (i, key) in keys.iter().enumerate() {
        let w = 32 + text_width(&key.label, LEGEND_FONT) as i32 + 22;
        if x + w > width as i32 && x > 16 {
            rows.push(Vec::new());
            x = 16;
        }
        rows.last_mut().expect("never empty").push((i, x));
        x += w;
    }
    rows
}

/// The height a legend of `keys` takes in `width` pixels.
pub fn legend_height(keys: &[Key], width: u32) -> u32 {
    legend_rows(keys, width).len() as u32 * LEGEND_ROW + 8
}

/// Draws `keys` on `area`, wrapping to as many rows as their measured widths need (see
/// [`legend_height`]), so no two entries touch.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    keys: &[Key],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    let (width, _) = area.dim_in_pixel();
    for (r, row) in legend_rows(keys, width).iter().enumerate() {
        let y = 6 + r as i32 * LEGEND_ROW as i32;
        for &(i, x) in row {
            let key = &keys[i];
            let square = [(x, y), (x + 22, y + 15)];
            match key.mark {
                Mark::Swatch => area
                    .draw(&Rectangle::new(square, key.color.filled()))
                    .map_err(err)?,
                Mark::PaleSwatch => {
                    area.draw(&Rectangle::new(square, key.color.mix(0.3).filled()))
                        .map_err(err)?;
                    area.draw(&Rectangle::new(square, key.color.stroke_width(2)))
                        .map_err(err)?;
                }
                Mark::Line(j) => area
                    .draw(&variant_line(
                        vec![(x, y + 8), (x + 28, y + 8)],
                        j,
                        key.color,
                        3,
                    ))
                    .map_err(err)?,
            }
            area.draw(&Text::new(
                key.label.clone(),
                (x + 32, y),
                (FONT, LEGEND_FONT),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}

/// A line through `points` in `color`, dashed as the variant at `index` is in every figure
/// (see [`style::dash`]), so curves that coincide still show each colour.
pub fn variant_line<DB: DrawingBackend, C: Clone + 'static>(
    points: Vec<C>,
    index: usize,
    color: RGBColor,
    width: u32,
) -> plotters::element::DynElement<'static, DB, C>
where
    PathElement<C>: Drawable<DB>,
    for<'b> &'b PathElement<C>: PointCollection<'b, C>,
    plotters::element::DashedPathElement<std::vec::IntoIter<C>, u32>: Drawable<DB>,
    for<'b> &'b plotters::element::DashedPathElement<std::vec::IntoIter<C>, u32>:
        PointCollection<'b, C>,
{
    match style::dash(index) {
        None => PathElement::new(points, color.stroke_width(width)).into_dyn(),
        Some((on, off)) => {
            plotters::element::DashedPathElement::new(points, on, off, color.stroke_width(width))
                .into_dyn()
        }
    }
}

/// Draws a figure's title on `area`, centred: on one line at `size` when it fits, else
/// broken at a word into two lines at the largest size that fits both, so no title is cut.
pub fn draw_title<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    size: u32,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    let (width, height) = area.dim_in_pixel();
    let (lines, size) = title_lines(text, size, width.saturating_sub(24), height);
    let line_height = (f64::from(size) * 1.25) as i32;
    let top = (height as i32 - line_height * lines.len() as i32) / 2 + 2;
    for (i, line) in lines.iter().enumerate() {
        let style =
            TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(
            line.clone(),
            (width as i32 / 2, top + i as i32 * line_height),
            style,
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The lines and font size of a title in `room` by `height` pixels: one line at `size` when
/// it fits, else two, broken at the space nearest the middle (a space after a comma or before
/// a parenthesis counts as nearer), at the largest size from `size` down to 11 that fits.
fn title_lines(text: &str, size: u32, room: u32, height: u32) -> (Vec<String>, u32) {
    if text_width(text, size) <= room {
        return (vec![text.to_string()], size);
    }
    let mid = text.len() as i64 / 2;
    let cut = text
        .char_indices()
        .filter(|(_, c)| *c == ' ')
        .map(|(i, _)| i)
        .min_by_key(|&i| {
            let distance = (i as i64 - mid).abs();
            let good = text[..i].ends_with(',') || text[i + 1..].starts_with('(');
            if good { distance / 2 } else { distance }
        });
    let lines = match cut {
        Some(cut) => vec![text[..cut].to_string(), text[cut + 1..].to_string()],
        None => vec![text.to_string()],
    };
    let mut s = size;
    while s > 11 {
        let fits = lines.iter().all(|l| text_width(l, s) <= room);
        if fits && f64::from(s) * 1.25 * lines.len() as f64 <= f64::from(height) {
            break;
        }
        s -= 1;
    }
    (lines, s)
}

/// Width and height of a single-panel figure, in pixels: readable at 100 % in a document.
pub const SIZE: (u32, u32) = (1000, 620);

impl Chart {
    /// The figure's size: panels per variant get room to breathe.
    fn size(&self, variants: usize) -> (u32, u32) {
        match self {
            Chart::SweepCurve { .. } | Chart::ComparisonBars { .. } | Chart::LatencyCdf { .. } => {
                SIZE
            }
            Chart::SweepGrid { .. } => (SIZE.0, 820),
            Chart::PhaseDiagram { .. } => phase_diagram::size(variants),
            Chart::TimeHistogram { .. }
            | Chart::LoadOverTime { .. }
            | Chart::PolicyOverTime { .. } => (SIZE.0, (150 * variants as u32 + 66).max(400)),
            // Panels are services here, with the variants' legend above them.
            Chart::ServiceLoad { .. } => (SIZE.0, (150 * variants as u32 + 110).max(400)),
            // Drawn by `render` from the graph's layout.
            Chart::CallGraph { .. } => SIZE,
            Chart::ServerOverTime { .. } => (SIZE.0, (160 * variants as u32 + 100).max(400)),
            Chart::LatencyHistogram { .. } => (SIZE.0, (120 * variants as u32 + 60).max(400)),
            Chart::Replications { .. } => (
                SIZE.0,
                (replications::ROW_HEIGHT * variants as u32 + 48).max(400),
            ),
        }
    }
}

/// The figures of a run.
pub fn figures(
    experiment: &Experiment,
    result: &ExperimentResult,
    format: ImageFormat,
    threads: usize,
) -> anyhow::Result<Vec<Figure>> {
    let charts = charts_for(experiment, result);
    let threads = crate::runner::thread_count(threads).clamp(1, charts.len().max(1));
    if threads == 1 {
        return charts
            .iter()
            .map(|chart| render(chart, experiment, result, format))
            .collect();
    }
    // Each thread takes the next chart not yet taken; the figures keep the charts' order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(chart) = charts.get(i) else {
                return done;
            };
            done.push((i, render(chart, experiment, result, format)));
        }
    };
    let mut rendered: Vec<(usize, anyhow::Result<Figure>)> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for handle in others {
            all.extend(handle.join().expect("a figure thread panicked"));
        }
        all
    });
    rendered.sort_by_key(|(i, _)| *i);
    rendered.into_iter().map(|(_, figure)| figure).collect()
}

/// Which charts a run gets.
pub fn charts_for(experiment: &Experiment, result: &ExperimentResult) -> Vec<Chart> {
    let graph = is_graph_run(experiment);
    let mut charts = vec![Chart::ComparisonBars {
        stem: "comparison",
        caption: if graph {
            "The headline numbers side by side; a bar's whisker is its 95 % confidence interval. In this call graph, work and amplification count the attempts at the entry service only: the services behind it are in the per-service table, call-graph and service-load-over-time."
        } else {
            "The headline numbers side by side; a bar's whisker is its 95 % confidence interval."
        },
    }];
    if experiment
        .sweep
        .as_ref()
        .is_some_and(|s| s.second.is_some())
    {
        charts.push(Chart::PhaseDiagram {
            stem: "phase-diagram",
            caption: phase_diagram::CAPTION,
        });
    }
    if experiment.sweep.is_some() {
        charts.push(Chart::SweepCurve {
            stem: "work",
            metric: Metric::ATTEMPTS,
            label: "work (attempts that reached the server)",
            caption: "Work against the swept value: lower is less load on the server.",
        });
        charts.push(Chart::SweepCurve {
            stem: "completion-time",
            metric: Metric::COMPLETION,
            label: "completion time (s)",
            caption: "When the last request ended: lower is faster.",
        });
        charts.push(Chart::SweepGrid {
            stem: "sweep-metrics",
            caption: "Every headline metric against the swept value, a line per variant with its 95 % band (all metrics with their intervals are in sweep.csv).",
        });
        charts.push(Chart::SweepCurve {
            stem: "amplification",
            metric: Metric::AMPLIFICATION,
            label: "amplification (attempts per request)",
            caption: "How many times each request reached the server: 1 is no retries at all.",
        });
        charts.push(Chart::SweepCurve {
            stem: "success-rate",
            metric: Metric::SUCCESS_RATE,
            label: "success rate (%)",
            caption: "The share of requests that ended in success.",
        });
        charts.push(Chart::SweepCurve {
            stem: "latency-p99",
            metric: Metric::SUCCESS_P99,
            label: if graph {
                "p99 latency of answered requests (ms)"
            } else {
                "p99 latency of successful requests (ms)"
            },
            caption: if graph {
                "The latency the slowest 1 % of answered requests exceed (successes and fallback answers alike), from start to answer; the failures' share is in success-rate."
            } else {
                "The latency the slowest 1 % of successful requests exceed, from start to success; the failures' share is in success-rate."
            },
        });
    }
    charts.push(Chart::LatencyCdf {
        stem: "latency",
        caption: if graph {
            "How long answered requests took (successes and, in this call graph, the requests a fallback answered alike: a fast fallback makes a variant look fast), start to answer, as a cumulative distribution on a log axis (every replication's requests pooled); dots mark each variant's p50 (at 50 %) and p99 (at 99 %), the legend its share of failed requests, which the curves leave out."
        } else {
            "How long successful requests took, start to success, as a cumulative distribution on a log axis (every replication's requests pooled); dots mark each variant's p50 (at 50 %) and p99 (at 99 %), the legend its share of failed requests, which the curves leave out so that failing fast does not look fast."
        },
    });
    charts.push(Chart::LatencyHistogram {
        stem: "latency-histogram",
        caption: if graph {
            "The shape of the latency distribution of answered requests (successes and fallback answers alike), a panel per variant on one log axis and one scale (share of answers per bin), its failure share in the title: two humps are a bimodal run, answers after a retry, or fast fallbacks beside real answers."
        } else {
            "The shape of the latency distribution of successful requests, a panel per variant on one log axis and one scale (share of successes per bin), its failure share in the title: two humps are a bimodal run or successes after a retry."
        },
    });
    // Hedges are stacked with the retries: both are attempts beyond a request's first.
    let hedged = result
        .points
        .iter()
        .flat_map(|p| &p.variants)
        .any(|v| v.metrics.hedges > 0.0);
    charts.push(Chart::LoadOverTime {
        stem: "load-over-time",
        caption: match (graph, hedged) {
            (true, false) => "What the clients sent to the entry service over time (pale: first attempts, dark: retries), what succeeded (black line) and the entry's queue (grey, right axis): a storm is where retries outgrow first attempts while goodput falls. The services behind the entry are in service-load-over-time.",
            (true, true) => "What the clients sent to the entry service over time (pale: first attempts, dark: retries and hedges), what succeeded (black line) and the entry's queue (grey, right axis): a storm is where retries and hedges outgrow first attempts while goodput falls. The services behind the entry are in service-load-over-time.",
            (false, false) => "What the clients sent over time (pale: first attempts, dark: retries), what succeeded (black line) and the server's queue (grey, right axis): a storm is where retries outgrow first attempts while goodput falls.",
            (false, true) => "What the clients sent over time (pale: first attempts, dark: retries and hedges), what succeeded (black line) and the server's queue (grey, right axis): a storm is where retries and hedges outgrow first attempts while goodput falls.",
        },
    });
    if policy_over_time::applies(experiment) {
        charts.push(Chart::PolicyOverTime {
            stem: "policy-over-time",
            caption: "The retry budgets and circuit breakers over time, a panel per variant that has one (line: the budgets' mean level, 100 % is full; shaded: the share of breakers open; grey bars: retries sent, on one right-hand scale for every panel): a budget drains as failures mount and stops retries when it is empty or, for a token bucket, at half (dashed); breakers open and close again; compare both with the retries bars.",
        });
    }
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    if result
        .points
        .get(focus)
        .is_some_and(|p| !replications::shown(&p.variants).is_empty())
    {
        charts.push(Chart::Replications {
            stem: "replications",
            caption: "Where a variant's replications split between recovering and staying collapsed, the mean describes no run: a typical recovered and a typical collapsed replication (median goodput within each group), on one time axis and scale.",
        });
    }
    if service_load::applies(experiment) {
        charts.push(Chart::CallGraph {
            stem: "call-graph",
            caption: "The call graph, a panel per variant in one layout: the clients and the services as boxes, each call as an arrow labelled with the attempts it carried per logical request the clients started (mean over replications ± its 95 % half-width), its width on one scale for every panel. The arrow into the entry counts the clients' own attempts; a number that grows along the arrows is retries multiplying down the graph. An arrow counts attempts sent: those a full service rejected are in the per-service table, and those a bulkhead refused never left and are in the per-call table.",
        });
        charts.push(Chart::ServiceLoad {
            stem: "service-load-over-time",
            caption: "Attempts each service of the call graph received per second, a panel per service on one time axis and one scale, a line per variant: where the retries of the callers above pile up, and for how long after the trigger.",
        });
    }
    if server_over_time::applies(result, focus) {
        charts.push(Chart::ServerOverTime {
            stem: "server-over-time",
            caption: if graph {
                "The entry service over time: workers busy (including those waiting on the entry's own calls) and the queue (left), and how the clients' attempts ended per second, by outcome (right), on one time axis and one scale per column."
            } else if !server_over_time::has_workers(experiment) {
                "The row over time: how the writes ended per second, by outcome, a panel per variant on one time axis and one scale (an occ row has no workers and no queue to draw)."
            } else {
                "The server over time: workers busy and the queue (left), and how attempts ended per second, by outcome (right), on one time axis and one scale per column."
            },
        });
    }
    let any_retries = result
        .points
        .iter()
        .flat_map(|p| &p.variants)
        .any(|v| v.series.iter().any(|r| r[Column::Retries as usize] > 0.0));
    if any_retries {
        charts.push(Chart::TimeHistogram {
            stem: "retries-over-time",
            column: Column::Retries,
            label: "retries sent",
            caption: "When retries were sent: without jitter they pile up on a few instants; with jitter they spread.",
        });
    }
    charts.push(Chart::TimeHistogram {
        stem: "attempts-over-time",
        column: Column::Attempts,
        label: "attempts at the server",
        caption: "When attempts reached the server (for the occ server, when writes happened).",
    });
    charts
}

fn render(
    chart: &Chart,
    experiment: &Experiment,
    result: &ExperimentResult,
    format: ImageFormat,
) -> anyhow::Result<Figure> {
    style::register_fonts();
    let (stem, caption) = match chart {
        Chart::SweepCurve { stem, caption, .. }
        | Chart::TimeHistogram { stem, caption, .. }
        | Chart::ComparisonBars { stem, caption }
        | Chart::LatencyHistogram { stem, caption }
        | Chart::ServerOverTime { stem, caption }
        | Chart::Replications { stem, caption }
        | Chart::LoadOverTime { stem, caption }
        | Chart::PolicyOverTime { stem, caption }
        | Chart::LatencyCdf { stem, caption }
        | Chart::PhaseDiagram { stem, caption }
        | Chart::ServiceLoad { stem, caption }
        | Chart::CallGraph { stem, caption }
        | Chart::SweepGrid { stem, caption } => (*stem, *caption),
    };
    // Curves against the first axis of a two-axis sweep show one value of the second.
    let caption = match chart {
        Chart::SweepCurve { .. } | Chart::SweepGrid { .. } => {
            let at = second_axis_at(experiment);
            if at.is_empty() {
                caption.to_string()
            } else {
                format!("{caption} Drawn{at}; the phase diagram shows every pair.")
            }
        }
        Chart::PhaseDiagram { .. } => phase_diagram::caption(caption, experiment, result),
        Chart::LoadOverTime { .. } => load_over_time::caption(caption, result),
        _ => caption.to_string(),
    };
    let panels = match chart {
        Chart::PolicyOverTime { .. } => policy_over_time::panel_count(experiment),
        Chart::Replications { .. } => {
            let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
            replications::shown(&result.points[focus].variants).len()
        }
        Chart::ServiceLoad { .. } => service_load::panel_count(experiment),
        _ => result.points[0].variants.len(),
    };
    let size = match chart {
        Chart::CallGraph { .. } => call_graph::size(experiment),
        _ => chart.size(panels),
    };
    let (image, csv) = match format {
        ImageFormat::Png => {
            let mut buf = vec![0u8; (size.0 * size.1 * 3) as usize];
            let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
            let csv = draw_chart(chart, experiment, result, root)?;
            let mut png = Vec::new();
            image::ImageEncoder::write_image(
                image::codecs::png::PngEncoder::new(&mut png),
                &buf,
                size.0,
                size.1,
                image::ColorType::Rgb8,
            )?;
            (png, csv)
        }
        ImageFormat::Svg => {
            let mut svg = String::new();
            let csv = draw_svg(chart, experiment, result, size, &mut svg)?;
            (svg.into_bytes(), csv)
        }
    };
    Ok(Figure {
        stem: stem.to_string(),
        caption,
        image,
        csv,
    })
}

fn draw_svg(
    chart: &Chart,
    experiment: &Experiment,
    result: &ExperimentResult,
    size: (u32, u32),
    svg: &mut String,
) -> anyhow::Result<Vec<u8>> {
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    draw_chart(chart, experiment, result, root)
}

/// Draws `chart` on `root` and returns its CSV.
fn draw_chart<DB: DrawingBackend>(
    chart: &Chart,
    experiment: &Experiment,
    result: &ExperimentResult,
    root: DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let csv = match chart {
        Chart::SweepCurve { metric, label, .. } => {
            sweep_curves::draw(experiment, result, metric, label, false, &root)?
        }
        Chart::SweepGrid { .. } => sweep_grid::draw(experiment, result, &root)?,
        Chart::PhaseDiagram { .. } => phase_diagram::draw(experiment, result, &root)?,
        Chart::TimeHistogram { column, label, .. } => {
            time_histogram::draw(experiment, result, *column, label, &root)?
        }
        Chart::ComparisonBars { .. } => comparison_bars::draw(experiment, result, &root)?,
        Chart::LoadOverTime { .. } => load_over_time::draw(experiment, result, &root)?,
        Chart::PolicyOverTime { .. } => policy_over_time::draw(experiment, result, &root)?,
        Chart::LatencyCdf { .. } => latency_cdf::draw(experiment, result, &root)?,
        Chart::LatencyHistogram { .. } => latency_histogram::draw(experiment, result, &root)?,
        Chart::ServerOverTime { .. } => server_over_time::draw(experiment, result, &root)?,
        Chart::Replications { .. } => replications::draw(experiment, result, &root)?,
        Chart::ServiceLoad { .. } => service_load::draw(experiment, result, &root)?,
        Chart::CallGraph { .. } => call_graph::draw(experiment, result, &root)?,
    };
    root.present()
        .map_err(|e| anyhow::anyhow!("drawing failed: {e}"))?;
    Ok(csv)
}

/// Whether some variant of the run is a call graph: its "successful" requests' latency then
/// counts the requests a fallback answered too (see [`metric_title`]).
pub fn is_graph_run(experiment: &Experiment) -> bool {
    experiment
        .points
        .iter()
        .flat_map(|p| &p.variants)
        .any(|v| v.scenario.is_graph())
}

/// A metric's title as figures and report.md show it: [`Metric::title`], except that in a
/// call graph the latency of successful requests is that of answered ones (a fallback's answer
/// counts with the successes), and says so.
pub fn metric_title(k: &Metric, graph: bool) -> String {
    match (graph, k.key.strip_prefix("success_latency_ms.")) {
        (true, Some(_)) => {
            let which = k.label.split(' ').next().unwrap_or(k.label);
            format!("{which} latency of answers ({})", k.unit.suffix())
        }
        _ => k.title(),
    }
}

/// The words for the requests whose latency the latency figures draw.
fn latency_of(experiment: &Experiment) -> &'static str {
    if is_graph_run(experiment) {
        "answered requests (successes and fallback answers)"
    } else {
        "successful requests"
    }
}

/// A variant's scaled mean and 95 % half-width of `k` as a figure draws it: (0, 0) where the
/// metric does not apply (no request succeeded, say).
pub fn estimate(k: &Metric, v: &VariantResult) -> (f64, f64) {
    k.estimate(&v.metrics, &v.ci95).unwrap_or((0.0, 0.0))
}
