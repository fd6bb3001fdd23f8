//! Figures: each kind of figure is one file here that implements [`Chart`], and one line of
//! [`FIGURES`] registers it. A figure builds the table it draws from a run, and the image and
//! the CSV beside it are both made from that one table, so the CSV is what was plotted; a
//! figure never writes files itself.
//!
//! A figure is laid out in pixels ([`Chart::size`]); a PNG draws that layout at twice the
//! resolution ([`hidpi`]), its text in the DejaVu Sans font compiled into the binary, so PNGs
//! look the same on every machine. An SVG keeps the layout's size and names the `sans-serif`
//! family, which the viewer's own font draws. A variant keeps one colour in every figure of a
//! run.

mod call_graph;
pub(crate) mod canvas;
mod comparison_bars;
mod ejections;
mod hidpi;
mod latency;
mod latency_cdf;
mod latency_histogram;
mod latency_over_time;
mod load_over_time;
mod over_time;
mod phase_diagram;
mod policy_over_time;
mod replica_load;
mod replications;
mod server_over_time;
mod service_load;
pub(crate) mod style;
mod sweep_curves;
mod sweep_grid;
mod theory;
mod time_histogram;
mod triggers;

use anyhow::Result;
use plotters::prelude::*;

pub use phase_diagram::{PhaseMetric, phase_metric};
pub use style::{tick, variant_color};

use crate::metrics::Metric;
use crate::metrics::{ExperimentResult, PointResult, VariantResult};
use crate::report::shape;
use crate::scenario::{Experiment, Variant};
use canvas::{Area, Drawn};

/// Every figure retrystorm draws, in the order report.md shows them. A run gets those whose
/// [`Chart::applies`] holds.
pub const FIGURES: &[&dyn Figure] = &[
    &comparison_bars::ComparisonBars,
    &theory::TheoryCheck,
    &phase_diagram::PhaseDiagram,
    &sweep_curves::WORK,
    &sweep_curves::COMPLETION,
    &sweep_grid::SweepGrid,
    &sweep_curves::AMPLIFICATION,
    &sweep_curves::SUCCESS_RATE,
    &sweep_curves::LATENCY_P99,
    &latency_cdf::LatencyCdf,
    &latency_histogram::LatencyHistogram,
    &load_over_time::LoadOverTime,
    &latency_over_time::LatencyOverTime,
    &policy_over_time::PolicyOverTime,
    &ejections::Ejections,
    &replications::Replications,
    &call_graph::CallGraph,
    &service_load::ServiceLoad,
    &replica_load::ReplicaLoad,
    &server_over_time::ServerOverTime,
    &time_histogram::RETRIES,
    &time_histogram::ATTEMPTS,
];

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
pub struct Rendered {
    /// File stem: the image is `<stem>.png` (or `.svg`), its data `<stem>.csv`.
    pub stem: String,
    /// One line saying what to look at.
    pub caption: String,
    /// The encoded image.
    pub image: Vec<u8>,
    /// The plotted data.
    pub csv: Vec<u8>,
}

/// The data a figure draws. Its CSV is written from it, and the figure is drawn from it.
pub trait Table {
    /// Writes the table as CSV records, its header first.
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()>;
}

/// One kind of figure: when a run gets it, what it says, how big it is, the table it draws
/// and how it draws it.
pub trait Chart: Sync {
    /// What the figure draws.
    type Table: Table;
    /// File stem: the image is `<stem>.png` (or `.svg`), its data `<stem>.csv`.
    fn stem(&self) -> &'static str;
    /// Whether the run gets this figure.
    fn applies(&self, _run: &Run) -> bool {
        true
    }
    /// One line saying what to look at.
    fn caption(&self, run: &Run) -> String;
    /// Width and height of the layout in pixels (the SVG's; a PNG has twice as many each way).
    fn size(&self, _run: &Run) -> (u32, u32) {
        SIZE
    }
    /// The data the figure draws.
    fn table(&self, run: &Run) -> Result<Self::Table>;
    /// Draws `table` on `root`.
    fn draw<DB: DrawingBackend>(
        &self,
        run: &Run,
        table: &Self::Table,
        root: &Area<DB>,
    ) -> Result<()>;
}

/// A registered figure, whatever its table: what [`FIGURES`] lists.
pub trait Figure: Sync {
    /// The file stem ([`Chart::stem`]).
    fn file_stem(&self) -> &'static str;
    /// Whether the run gets this figure ([`Chart::applies`]).
    fn shown(&self, run: &Run) -> bool;
    /// The image and the CSV of one table.
    fn render(&self, run: &Run, format: ImageFormat) -> Result<Rendered>;
}

impl<C: Chart> Figure for C {
    fn file_stem(&self) -> &'static str {
        self.stem()
    }

    fn shown(&self, run: &Run) -> bool {
        self.applies(run)
    }

    fn render(&self, run: &Run, format: ImageFormat) -> Result<Rendered> {
        style::register_fonts();
        let table = self.table(run)?;
        let mut w = csv::Writer::from_writer(Vec::new());
        table.write(&mut w)?;
        let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
        let drawing = Bound {
            chart: self,
            run,
            table: &table,
        };
        let image = encode(&drawing, self.size(run), format)?;
        Ok(Rendered {
            stem: self.stem().to_string(),
            caption: self.caption(run),
            image,
            csv,
        })
    }
}

/// Something drawn on a figure's area, whatever the backend: a chart with its run and table,
/// or a figure of another command's own.
pub trait Drawing {
    /// Draws on `root`.
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<()>;
}

/// A chart bound to the run and the table it draws.
struct Bound<'a, C: Chart> {
    chart: &'a C,
    run: &'a Run<'a>,
    table: &'a C::Table,
}

impl<C: Chart> Drawing for Bound<'_, C> {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<()> {
        self.chart.draw(self.run, self.table, root)
    }
}

thread_local! {
    /// The pixels of the last PNG figure this thread drew, kept for its next: a fresh canvas
    /// (7-11 MB at twice the figure's size) is fresh pages each time, and the kernel's page
    /// faults and zeroing of them were about 13 % of re-rendering the AWS sweep's report
    /// (BENCHMARKS.md section 4).
    static PIXELS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Encodes `drawing`, laid out at `size`, as a PNG (drawn at twice the size, in the font
/// compiled into the binary) or an SVG.
pub fn encode(drawing: &impl Drawing, size: (u32, u32), format: ImageFormat) -> Result<Vec<u8>> {
    style::register_fonts();
    Ok(match format {
        ImageFormat::Png => {
            let (w, h) = (size.0 * hidpi::SCALE, size.1 * hidpi::SCALE);
            PIXELS.with_borrow_mut(|buf| {
                buf.clear();
                buf.resize((w * h * 3) as usize, 0);
                let bitmap = BitMapBackend::with_buffer(buf, (w, h));
                let root = hidpi::Scaled(bitmap).into_drawing_area();
                drawing.draw(&root)?;
                root.present().drawn()?;
                drop(root);
                let mut png = Vec::with_capacity(buf.len() / 16);
                image::ImageEncoder::write_image(
                    // Paeth on every row rather than the encoder's default of trying all five
                    // filters on each: a fifth fewer instructions to render the figures, for
                    // files about 4 % larger; the pixels are the same.
                    image::codecs::png::PngEncoder::new_with_quality(
                        &mut png,
                        image::codecs::png::CompressionType::Fast,
                        image::codecs::png::FilterType::Paeth,
                    ),
                    buf,
                    w,
                    h,
                    image::ColorType::Rgb8,
                )?;
                anyhow::Ok(png)
            })?
        }
        ImageFormat::Svg => {
            let mut svg = String::new();
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            drawing.draw(&root)?;
            root.present().drawn()?;
            drop(root);
            svg.into_bytes()
        }
    })
}

/// A finished run, as figures read it.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    /// What was run.
    pub experiment: &'a Experiment,
    /// What came of it.
    pub result: &'a ExperimentResult,
}

impl<'a> Run<'a> {
    /// The index of the sweep point that figures of a single sweep value show.
    pub fn focus(&self) -> usize {
        self.experiment.sweep.as_ref().map_or(0, |s| s.focus())
    }

    /// The results at the focus point.
    pub fn point(&self) -> &'a PointResult {
        &self.result.points[self.focus()]
    }

    /// The variants run at the focus point, as validated.
    pub fn ran(&self) -> &'a [Variant] {
        &self.experiment.points[self.focus()].variants
    }

    /// The variants' results, as the first point has them (every point has the same).
    pub fn variants(&self) -> &'a [VariantResult] {
        &self.result.points[0].variants
    }

    /// The experiment's name.
    pub fn name(&self) -> &'a str {
        &self.experiment.name
    }

    /// The words that say which sweep point the figures of a single sweep value show (empty
    /// without a sweep).
    pub fn at(&self) -> String {
        let experiment = self.experiment;
        let focus = self.focus();
        let mut at = self.result.points[focus]
            .value
            .as_ref()
            .zip(experiment.sweep.as_ref())
            .map_or(String::new(), |(v, s)| {
                format!(" at {} = {}", s.label, crate::report::value_text(Some(v)))
            });
        if let Some((y, second)) = experiment.points[focus]
            .second_value
            .as_ref()
            .zip(experiment.sweep.as_ref().and_then(|s| s.second.as_ref()))
        {
            at.push_str(&format!(
                ", {} = {}",
                second.label,
                crate::report::value_text(Some(y))
            ));
        }
        at
    }

    /// Each variant's trigger windows at the focus point, in seconds.
    pub fn windows(&self) -> Vec<Vec<(f64, f64)>> {
        triggers::windows(self.ran())
    }

    /// Whether a request of some variant of the run can be answered degraded
    /// ([`shape::can_degrade`]): then latency figures draw answered requests, a fallback's
    /// answers with the successes, and say so ([`metric_title`]).
    pub fn can_degrade(&self) -> bool {
        shape::any_can_degrade(self.experiment.scenarios())
    }

    /// Whether some variant of the run has calls below the entry ([`shape::has_calls`]):
    /// then the headline numbers describe the entry, and the services behind it have figures
    /// of their own.
    pub fn has_calls(&self) -> bool {
        self.experiment.any_has_calls()
    }

    /// ", mean of N replications" with more than one, else nothing.
    pub fn mean_of(&self) -> String {
        if self.experiment.replications > 1 {
            format!(", mean of {} replications", self.experiment.replications)
        } else {
            String::new()
        }
    }
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
                second.label,
                crate::report::value_text(Some(&second.values[second.focus()]))
            ))
        })
        .unwrap_or_default()
}

/// A variant's name as figures show it: with "(truncated)" when a limit cut it short.
pub fn display_name(v: &VariantResult) -> String {
    if v.is_truncated() {
        format!("{} (truncated)", v.name)
    } else {
        v.name.clone()
    }
}

/// Width and height of a single-panel figure's layout, in pixels (a PNG has twice as many
/// each way): readable at 100 % in a document.
pub const SIZE: (u32, u32) = (1000, 620);

/// The size of a figure of `panels` rows, each `row` pixels tall, below `head` pixels of
/// title and legend: at least 400 pixels tall.
fn rows_size(panels: usize, row: u32, head: u32) -> (u32, u32) {
    (SIZE.0, (row * panels as u32 + head).max(400))
}

/// The figures of a run.
pub fn figures(
    experiment: &Experiment,
    result: &ExperimentResult,
    format: ImageFormat,
    threads: usize,
) -> Result<Vec<Rendered>> {
    let run = Run { experiment, result };
    let charts: Vec<&dyn Figure> = FIGURES.iter().copied().filter(|f| f.shown(&run)).collect();
    let threads = crate::runner::thread_count(threads).clamp(1, charts.len().max(1));
    if threads == 1 {
        return charts.iter().map(|f| f.render(&run, format)).collect();
    }
    // Each thread takes the next figure not yet taken; the figures keep the registry's order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(figure) = charts.get(i) else {
                return done;
            };
            done.push((i, figure.render(&run, format)));
        }
    };
    let mut rendered: Vec<(usize, Result<Rendered>)> = std::thread::scope(|scope| {
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

/// A metric's title as figures and report.md show it: [`Metric::title`], except that where a
/// request can be answered degraded (`can_degrade`, [`Run::can_degrade`]) the latency of
/// successful requests is that of answered ones (a fallback's answer counts with the
/// successes), and says so.
pub fn metric_title(k: &Metric, can_degrade: bool) -> String {
    match (can_degrade, k.key.strip_prefix("success_latency_ms.")) {
        (true, Some(_)) => {
            let which = k.label.split(' ').next().unwrap_or(k.label);
            format!("{which} latency of answers ({})", k.unit.suffix())
        }
        _ => k.title(),
    }
}

#[cfg(test)]
mod tests {
    use super::Run;
    use crate::scenario::{LoadOptions, load_str};

    /// metastable-phase's titles read `stall end time = "22s"`: a swept string is shown as
    /// the text it is, on either axis.
    #[test]
    fn a_swept_string_is_shown_without_its_quotes() {
        let text = r#"{"name": "s", "duration": "1s",
            "clients": {"count": 1, "workload": {"open": {"rate_per_s": 5}}},
            "server": {"service_time": {"constant": "1ms"}},
            "sweep": {"path": "policy.timeout", "values": ["10ms", "20ms"], "focus": "20ms",
                      "second": {"path": "network.latency.constant", "values": ["1ms", "2ms"]}}}"#;
        let experiment = load_str(text, "s", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        let at = run.at();
        assert!(at.contains("= 20ms"), "{at}");
        assert!(!at.contains('"'), "{at}");
        assert!(!super::second_axis_at(&experiment).contains('"'));
    }
}
