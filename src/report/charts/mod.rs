//! Figures: each kind of chart is one file here plus one [`Chart`] variant. A chart turns
//! results into an image (PNG or SVG) and the CSV of exactly the data it plots; it never
//! writes files itself.
//!
//! Text is drawn with the DejaVu Sans font compiled into the binary, so figures look the same
//! on every machine and need no fonts from the operating system. A variant keeps one colour in
//! every figure of a run.

mod comparison_bars;
mod latency_cdf;
mod load_over_time;
mod phase_diagram;
mod policy_over_time;
mod style;
mod sweep_curves;
mod sweep_grid;
mod time_histogram;
mod triggers;

use plotters::coord::Shift;
use plotters::prelude::*;

pub use phase_diagram::{PhaseMetric, phase_metric};
pub use style::{tick, variant_color};

use crate::metrics::{Column, Metric};
use crate::runner::ExperimentResult;
use crate::runner::VariantResult;
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
) -> (&'a crate::runner::PointResult, String) {
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let point = &result.points[focus];
    let mut at = point
        .value
        .as_ref()
        .zip(experiment.sweep.as_ref())
        .map_or(String::new(), |(v, s)| format!(" at {} = {v}", s.path));
    if let Some((y, second)) = experiment.points[focus]
        .second_value
        .as_ref()
        .zip(experiment.sweep.as_ref().and_then(|s| s.second.as_ref()))
    {
        at.push_str(&format!(", {} = {y}", second.path));
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
                second.path,
                second.values[second.focus()]
            ))
        })
        .unwrap_or_default()
}

/// The time-axis end of each panel of a per-variant figure, given where each panel's activity
/// ends (in seconds). Panels share one axis unless their spans differ by more than 4x, when a
/// shared axis would squash the short ones flat; an empty panel takes the longest span.
fn panel_ends(activity_ends: &[f64]) -> Vec<f64> {
    let longest = activity_ends.iter().copied().fold(0.0, f64::max).max(1e-9);
    let spans: Vec<f64> = activity_ends
        .iter()
        .map(|e| if *e > 0.0 { *e } else { longest })
        .collect();
    let shortest = spans.iter().copied().fold(f64::INFINITY, f64::min);
    let shared = longest <= 4.0 * shortest;
    spans
        .iter()
        .map(|e| if shared { longest } else { *e } * 1.02)
        .collect()
}

/// A bar's width in data units: its bucket, but never narrower than about one pixel of a
/// panel spanning `end`, so that a spike in a narrow bucket stays visible.
fn bar_width(bucket: f64, end: f64) -> f64 {
    bucket.max(end / 900.0)
}

/// A row of colour swatches naming the variants, in file order.
fn legend_row<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    names: &[String],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let step = 960 / names.len().max(1) as i32;
    for (j, name) in names.iter().enumerate() {
        let x = 20 + j as i32 * step;
        let color = variant_color(j);
        area.draw(&Rectangle::new([(x, 10), (x + 18, 26)], color.filled()))
            .map_err(|e| anyhow::anyhow!("drawing failed: {e}"))?;
        area.draw(&Text::new(name.clone(), (x + 24, 10), (style::FONT, 15)))
            .map_err(|e| anyhow::anyhow!("drawing failed: {e}"))?;
    }
    Ok(())
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
            | Chart::PolicyOverTime { .. } => (SIZE.0, (150 * variants as u32 + 60).max(400)),
        }
    }
}

/// The figures of a run.
pub fn figures(
    experiment: &Experiment,
    result: &ExperimentResult,
    format: ImageFormat,
) -> anyhow::Result<Vec<Figure>> {
    charts_for(experiment, result)
        .iter()
        .map(|chart| render(chart, experiment, result, format))
        .collect()
}

/// Which charts a run gets.
pub fn charts_for(experiment: &Experiment, result: &ExperimentResult) -> Vec<Chart> {
    let mut charts = vec![Chart::ComparisonBars {
        stem: "comparison",
        caption: "The headline numbers side by side; a bar's whisker is its 95 % confidence interval.",
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
            label: "p99 latency of successful requests (ms)",
            caption: "The latency the slowest 1 % of successful requests exceed, from start to success; the failures' share is in success-rate.",
        });
    }
    charts.push(Chart::LatencyCdf {
        stem: "latency",
        caption: "How long requests took, start to final outcome, as a cumulative distribution on a log axis; dots mark each variant's p50 (at 50 %) and p99 (at 99 %).",
    });
    charts.push(Chart::LoadOverTime {
        stem: "load-over-time",
        caption: "What the clients sent over time (pale: first attempts, dark: retries), what succeeded (black line) and the server's queue (grey, right axis): a storm is where retries outgrow first attempts while goodput falls.",
    });
    if policy_over_time::applies(experiment) {
        charts.push(Chart::PolicyOverTime {
            stem: "policy-over-time",
            caption: "The retry budgets and circuit breakers over time, a panel per variant that has one (line: the budgets' mean level, 100 % is full; shaded: the share of breakers open; grey bars: retries sent, on one right-hand scale for every panel): a budget drains as failures mount and stops retries when it is empty or, for a token bucket, at half (dashed); breakers open and close again; compare both with the retries bars.",
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
        | Chart::LoadOverTime { stem, caption }
        | Chart::PolicyOverTime { stem, caption }
        | Chart::LatencyCdf { stem, caption }
        | Chart::PhaseDiagram { stem, caption }
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
        _ => caption.to_string(),
    };
    let panels = match chart {
        Chart::PolicyOverTime { .. } => policy_over_time::panel_count(experiment),
        _ => result.points[0].variants.len(),
    };
    let size = chart.size(panels);
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
    };
    root.present()
        .map_err(|e| anyhow::anyhow!("drawing failed: {e}"))?;
    Ok(csv)
}

/// A variant's scaled mean and 95 % half-width of `k` as a figure draws it: (0, 0) where the
/// metric does not apply (no request succeeded, say).
pub fn estimate(k: &Metric, v: &VariantResult) -> (f64, f64) {
    k.estimate(&v.metrics, &v.ci95).unwrap_or((0.0, 0.0))
}
