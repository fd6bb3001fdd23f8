//! A metric against the swept value: a line per variant, with its 95 % confidence band. With
//! a two-axis sweep, against the first axis at the second axis' focus value. The sweep grid
//! draws its small panels with [`plot`] too.

use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde_json::Value;

use super::canvas::{self, Area, Drawn};
use super::style::{FONT, axis_ticks, power_tick, variant_color};
use super::{Chart, Run, Table};
use crate::metrics::Metric;
use crate::report;
use crate::report::shape::spread_split;

/// A sweep curve figure: one metric against the swept value.
pub struct SweepCurve {
    stem: &'static str,
    metric: Metric,
    /// Axis label, with its unit.
    label: &'static str,
    caption: &'static str,
    /// The label and caption where a request can be answered degraded, where they differ.
    answered: Option<(&'static str, &'static str)>,
}

/// Work against the swept value.
pub const WORK: SweepCurve = SweepCurve {
    stem: "work",
    metric: Metric::ATTEMPTS,
    label: "work (attempts that reached the server)",
    caption: "Work against the swept value: lower is less load on the server.",
    answered: None,
};

/// Completion time against the swept value.
pub const COMPLETION: SweepCurve = SweepCurve {
    stem: "completion-time",
    metric: Metric::COMPLETION,
    label: "completion time (s)",
    caption: "When the last request ended: lower is faster.",
    answered: None,
};

/// Amplification against the swept value.
pub const AMPLIFICATION: SweepCurve = SweepCurve {
    stem: "amplification",
    metric: Metric::AMPLIFICATION,
    label: "amplification (attempts per request)",
    caption: "How many times each request reached the server: 1 is no retries at all.",
    answered: None,
};

/// The success rate against the swept value.
pub const SUCCESS_RATE: SweepCurve = SweepCurve {
    stem: "success-rate",
    metric: Metric::SUCCESS_RATE,
    label: "success rate (%)",
    caption: "The share of requests that ended in success.",
    answered: None,
};

/// The p99 latency against the swept value.
pub const LATENCY_P99: SweepCurve = SweepCurve {
    stem: "latency-p99",
    metric: Metric::SUCCESS_P99,
    label: "p99 latency of successful requests (ms)",
    caption: "The latency the slowest 1 % of successful requests exceed, from start to success; the failures' share is in sweep-metrics.png's success panel.",
    answered: Some((
        "p99 latency of answered requests (ms)",
        "The latency the slowest 1 % of answered requests exceed (successes and fallback answers alike), from start to answer; the failures' share is in sweep-metrics.png's success panel.",
    )),
};

impl SweepCurve {
    /// The axis label and caption for `run`.
    fn words(&self, run: &Run) -> (&'static str, &'static str) {
        match self.answered {
            Some(words) if run.can_degrade() => words,
            _ => (self.label, self.caption),
        }
    }
}

/// The caption of a figure against the first sweep axis: with two axes, which value of the
/// second it is drawn at.
pub fn against_first_axis(caption: &str, run: &Run) -> String {
    let at = super::second_axis_at(run.experiment);
    if at.is_empty() {
        caption.to_string()
    } else {
        format!("{caption} Drawn{at}; the phase diagram shows every pair.")
    }
}

/// The variants that failed more than half their requests beyond doubt (the 95 % interval of
/// their failure share above 50 %) at some point of the first sweep axis: metastable-phase's
/// p99 of successes fell where success collapsed to 10 %.
fn collapsed_variants(run: &Run) -> Vec<String> {
    let failed = points(run, &Metric::FAILURE_RATE);
    let names = run.variants();
    failed
        .iter()
        .zip(names)
        .filter(|(curve, _)| curve.iter().flatten().any(|(m, h)| m - h > 50.0))
        .map(|(_, v)| format!("\"{}\"", v.name))
        .collect()
}

/// Whether every curve is one flat line: every mean within 1 % of the largest. Such a figure
/// carries no information (retry-budget's completion time is its 40 s duration at every
/// point, aws-backoff-jitter's success 100 %), so it is left out; sweep-metrics.png says the
/// value in words.
fn flat(points: &Points) -> bool {
    let means = || points.iter().flatten().flatten().map(|c| c.0);
    let hi = means().fold(f64::NEG_INFINITY, f64::max);
    let lo = means().fold(f64::INFINITY, f64::min);
    hi.is_finite() && hi - lo <= 0.01 * hi.abs()
}

/// Whether variant `j` split at the `i`th point of the first sweep axis ([`spread_split`]):
/// a black ring marks it.
fn split_at(run: &Run, j: usize, i: usize) -> bool {
    let line = run.experiment.sweep.as_ref().map(|s| s.first_axis_points());
    let point = line.and_then(|l| Some(&run.result.points[*l.get(i)?]));
    point.is_some_and(|p| spread_split(&p.variants[j], run.experiment.replications))
}

/// Per variant, per first-axis point: (mean, half-width) of a metric, scaled; `None` where
/// the metric does not apply (success latency where nothing succeeded): a gap in the line, an
/// empty CSV cell.
pub type Points = Vec<Vec<Option<(f64, f64)>>>;

/// The curves of `metric` along the first sweep axis.
pub fn points(run: &Run, metric: &Metric) -> Points {
    let line = run
        .experiment
        .sweep
        .as_ref()
        .map_or_else(Vec::new, |s| s.first_axis_points());
    (0..run.variants().len())
        .map(|j| {
            line.iter()
                .map(|&k| {
                    let v = &run.result.points[k].variants[j];
                    metric.estimate(&v.metrics, &v.ci95)
                })
                .collect()
        })
        .collect()
}

/// A curve figure's table: the swept values, the variants' names and their curves.
pub struct Curves {
    /// The first axis' path, and the second's with its focus value, if any.
    axes: (String, Option<(String, String)>),
    values: Vec<String>,
    label: String,
    names: Vec<String>,
    points: Points,
}

impl Table for Curves {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        // With two axes, the second axis' value follows the first's in every row.
        let (path, second) = &self.axes;
        let mut header = vec![path.as_str()];
        header.extend(second.as_ref().map(|(path, _)| path.as_str()));
        header.extend(["variant", &self.label, "ci95"]);
        w.write_record(&header)?;
        for (name, curve) in self.names.iter().zip(&self.points) {
            for (value, cell) in self.values.iter().zip(curve) {
                let mut record = vec![value.clone()];
                record.extend(second.as_ref().map(|(_, y)| y.clone()));
                let (mean, half) = cell.map_or((String::new(), String::new()), |(m, h)| {
                    (m.to_string(), h.to_string())
                });
                record.extend([name.clone(), mean, half]);
                w.write_record(&record)?;
            }
        }
        Ok(())
    }
}

impl Chart for SweepCurve {
    type Table = Curves;

    fn stem(&self) -> &'static str {
        self.stem
    }

    fn applies(&self, run: &Run) -> bool {
        run.experiment.sweep.is_some() && !flat(&points(run, &self.metric))
    }

    fn caption(&self, run: &Run) -> String {
        let mut caption = against_first_axis(self.words(run).1, run);
        let collapsed = collapsed_variants(run);
        if self.metric == Metric::SUCCESS_P99 && !collapsed.is_empty() {
            caption.push_str(&format!(
                " Where a variant failed more than half its requests (the 95 % interval above, as {} did at some values), its p99 counts only the few it answered, often those before a collapse: a low value there is no sign of speed.",
                collapsed.join(", ")
            ));
        }
        caption
    }

    fn table(&self, run: &Run) -> Result<Curves> {
        let sweep = run
            .experiment
            .sweep
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a sweep curve needs a sweep"))?;
        let second = sweep.second.as_ref().map(|s| {
            let focus = report::value_text(Some(&s.values[s.focus()]));
            (s.path.clone(), focus)
        });
        let values = sweep.values.iter();
        Ok(Curves {
            axes: (sweep.path.clone(), second),
            values: values.map(|v| report::value_text(Some(v))).collect(),
            label: self.words(run).0.to_string(),
            names: run.variants().iter().map(|v| v.name.clone()).collect(),
            points: points(run, &self.metric),
        })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Curves, root: &Area<DB>) -> Result<()> {
        let points = run.experiment.sweep.as_ref().map_or(0, |s| s.values.len());
        let ringed = (0..run.variants().len()).any(|j| (0..points).any(|i| split_at(run, j, i)));
        let title = format!(
            "{}: {}{}{}",
            run.name(),
            table.label,
            super::second_axis_at(run.experiment),
            if ringed {
                " (black ring: its replications split, the mean describes no run)"
            } else {
                ""
            }
        );
        // The title on its own band (wrapped when long) and the legend above the plot, never
        // over the lines.
        let body = canvas::titled(root, &title, if ringed { 76 } else { 52 }, 22)?;
        let keys = canvas::variant_keys(run.variants(), true);
        let area = canvas::legend(&body, &keys)?;
        plot(run, &table.points, &table.label, false, &area)
    }
}

/// The lines drawn wholly under a later one (drawn on top) on axis `y`: `(j, k)` where
/// variant `j`'s curve lies within 1 % of the axis' height of variant `k`'s at every value,
/// with gaps at the same values; each `j` names the last such `k`, the one that is seen.
pub fn hidden_under(points: &Points, y: &YScale) -> Vec<(usize, usize)> {
    let close = |a: &[Option<(f64, f64)>], b: &[Option<(f64, f64)>]| {
        let tolerance = (y.hi - y.lo) * 0.01;
        a.len() == b.len()
            && a.iter().zip(b).all(|(p, q)| match (p, q) {
                (Some((m, _)), Some((n, _))) => (y.at(*m) - y.at(*n)).abs() <= tolerance,
                (None, None) => true,
                _ => false,
            })
            && a.iter().any(Option::is_some)
    };
    (0..points.len())
        .filter_map(|j| {
            let k = (j + 1..points.len())
                .rev()
                .find(|&k| close(&points[j], &points[k]))?;
            Some((j, k))
        })
        .collect()
}

/// What a panel says of its hidden lines (see [`hidden_under`]), starting with a space:
/// "all coincide" where all do, else in a compact panel how many are hidden and in a full
/// one which under which; empty where none is hidden.
pub fn covered_words(
    hidden: &[(usize, usize)],
    variants: usize,
    names: &[&str],
    compact: bool,
) -> String {
    if hidden.is_empty() {
        return String::new();
    }
    let all = hidden.len() + 1 == variants && hidden.iter().all(|&(_, k)| k + 1 == variants);
    match (all, compact) {
        (true, true) => return " (all coincide)".to_string(),
        (true, false) => return " (all variants' lines coincide)".to_string(),
        (false, true) => return format!(" ({} hidden)", hidden.len()),
        (false, false) => {}
    }
    let name = |i: usize| names.get(i).copied().unwrap_or("?");
    let pairs: Vec<String> = hidden
        .iter()
        .map(|&(j, k)| format!("{} drawn under {}", name(j), name(k)))
        .collect();
    format!(" ({})", pairs.join("; "))
}

/// The largest font size from 15 down to 10 at which `text` fits `room` pixels.
fn fitting_size(text: &str, room: u32) -> u32 {
    (10..=15)
        .rev()
        .find(|&s| canvas::text_width(text, s) <= room)
        .unwrap_or(10)
}

/// Writes what a full-size plot says of its hidden lines ([`covered_words`]) centred at the
/// top of `area`, over the plot.
fn draw_covered<DB: DrawingBackend>(area: &Area<DB>, covered: &str) -> Result<()> {
    let note = covered.trim_start_matches([' ', '(']).trim_end_matches(')');
    let style = (FONT, 15).into_font().color(&BLACK.mix(0.7));
    let (w, _) = area.dim_in_pixel();
    let x = (w as i32) / 2 - canvas::text_width(note, 15) as i32 / 2;
    area.draw_text(note, &style, (x, 2)).drawn()
}

/// Where the sweep's values sit on the x axis, and whether on a log axis: numeric values at
/// their value (their log10 when they span two decades or more), others at their position.
fn x_positions(values: &[Value]) -> (Vec<f64>, Option<Vec<f64>>, bool) {
    let numeric: Option<Vec<f64>> = values.iter().map(Value::as_f64).collect();
    let log = log_axis(numeric.as_deref());
    let xs = match &numeric {
        Some(xs) if log => xs.iter().map(|x| x.log10()).collect(),
        Some(xs) => xs.clone(),
        None => (0..values.len()).map(|i| i as f64).collect(),
    };
    (xs, numeric, log)
}

/// Draws `points` (in the metric's printed unit) against the swept value on `area`. Compact:
/// one panel of a grid, titled by its metric, the legend drawn once outside.
pub fn plot<DB: DrawingBackend>(
    run: &Run,
    points: &Points,
    label: &str,
    compact: bool,
    area: &Area<DB>,
) -> Result<()> {
    let sweep = run
        .experiment
        .sweep
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("a sweep curve needs a sweep"))?;
    // Numeric values spanning two decades or more (clients 10, 100, 1000) go on a log axis,
    // else the small ones crowd at the left: plotted at their log10, labelled at powers of 10.
    let (xs, numeric, log) = x_positions(&sweep.values);
    let (x0, x1, pad) = x_range(&xs, numeric.is_some());
    let y = YScale::of(points);
    if let Some(words) = nothing_to_show(points) {
        let body = if compact {
            let (band, body) = area.split_vertically(24);
            canvas::draw_title(&band, label, 15)?;
            body
        } else {
            area.clone()
        };
        return canvas::nothing_to_show(&body, words, if compact { 14 } else { 18 });
    }
    let (margin, x_area, y_area, font) = if compact {
        (6, 24, 56, 12)
    } else {
        (16, 52, 80, 16)
    };
    let names: Vec<&str> = run.variants().iter().map(|v| v.name.as_str()).collect();
    let covered = covered_words(&hidden_under(points, &y), points.len(), &names, compact);
    let mut builder = ChartBuilder::on(area);
    if compact {
        let caption = format!("{}{covered}", y.title(label));
        let size = fitting_size(&caption, area.dim_in_pixel().0.saturating_sub(8));
        builder.caption(caption, (FONT, size));
    }
    let mut chart = builder
        .margin(margin)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area)
        .build_cartesian_2d(
            super::style::span(x0 - pad, x1 + pad),
            super::style::span(y.lo, y.hi),
        )
        .drawn()?;
    let x_ticks = axis_ticks(x0.abs().max(x1.abs()));
    let x_label = x_labels(sweep.values.clone(), numeric.is_some(), log, x_ticks);
    let y_ticks = axis_ticks(y.top);
    let y_label = |v: &f64| if y.log { power_tick(v) } else { y_ticks(v) };
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .x_labels(if compact { 5 } else { 10 })
        .y_labels(if compact { 4 } else { 10 })
        .label_style((FONT, font))
        .axis_desc_style((FONT, 18))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08));
    let x_desc = if log {
        format!("{} (log scale)", sweep.label.clone())
    } else {
        sweep.label.clone()
    };
    let y_desc = y.title(label);
    if !compact {
        mesh.x_desc(x_desc.as_str()).y_desc(y_desc.as_str());
    }
    mesh.draw().drawn()?;
    if !compact && !covered.is_empty() {
        draw_covered(area, &covered)?;
    }
    for (j, curve) in points.iter().enumerate() {
        let color = variant_color(j);
        let rings = (0..xs.len().min(curve.len())).filter_map(|i| {
            let at = curve[i].filter(|_| !compact && split_at(run, j, i));
            at.map(|(m, _)| Circle::new((xs[i], y.at(m)), 11, BLACK.stroke_width(2)))
        });
        chart.draw_series(rings).drawn()?;
        // One band and line per run of points where the metric applies.
        let points: Vec<Option<(f64, f64, f64)>> = xs
            .iter()
            .zip(curve)
            .map(|(x, c)| c.map(|(m, h)| (*x, m, h)))
            .collect();
        for run in points.split(Option::is_none) {
            let run: Vec<(f64, f64, f64)> = run.iter().flatten().copied().collect();
            if !run.is_empty() {
                draw_run(&mut chart, &run, &y, j, color, compact)?;
            }
        }
    }
    Ok(())
}

/// The ends of the x axis, `xs`' least and greatest, and the room left at both: 3 % of the
/// range for `numeric` values (a failure rate from 0 to 1 as well as a client count), half a
/// step for values plotted at their position.
fn x_range(xs: &[f64], numeric: bool) -> (f64, f64, f64) {
    let x0 = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let x1 = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = if numeric && x1 > x0 {
        (x1 - x0) * 0.03
    } else {
        0.5
    };
    (x0, x1, pad)
}

/// The x axis' tick labels: at whole powers of ten only on a log axis, as numbers for
/// numeric values, else the value at each position.
fn x_labels(
    values: Vec<Value>,
    numeric: bool,
    log: bool,
    ticks: impl Fn(&f64) -> String,
) -> impl Fn(&f64) -> String {
    move |x: &f64| {
        if log {
            power_tick(x)
        } else if numeric {
            ticks(x)
        } else {
            let value = values.get(x.round() as usize);
            value.map_or(String::new(), |v| v.to_string())
        }
    }
}

/// One stretch of a variant's curve where the metric applies: its band, its line and its
/// markers.
fn draw_run<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    run: &[(f64, f64, f64)],
    y: &YScale,
    j: usize,
    color: RGBColor,
    compact: bool,
) -> Result<()> {
    let upper = run.iter().map(|(x, m, h)| (*x, y.at(m + h)));
    let lower = run.iter().map(|(x, m, h)| (*x, y.at((m - h).max(0.0))));
    let band: Vec<(f64, f64)> = upper.chain(lower.rev()).collect();
    chart
        .draw_series(std::iter::once(Polygon::new(
            band,
            color.mix(0.18).filled(),
        )))
        .drawn()?;
    let line: Vec<(f64, f64)> = run.iter().map(|(x, m, _)| (*x, y.at(*m))).collect();
    let width = if compact { 2 } else { 3 };
    chart
        .draw_series(std::iter::once(canvas::variant_line(
            line.clone(),
            j,
            color,
            width,
        )))
        .drawn()?;
    let size = if compact { 3 } else { 5 };
    chart
        .draw_series(line.iter().map(|p| marker(*p, j, size, color)))
        .drawn()?;
    Ok(())
}

/// Why `points` leave nothing to draw, in words for the panel: the metric applies to no
/// variant, or it is 0 everywhere (no request rejected at any value). `None` when there is
/// something to draw.
pub fn nothing_to_show(points: &Points) -> Option<&'static str> {
    let mut cells = points.iter().flatten().flatten().peekable();
    if cells.peek().is_none() {
        Some("applies to no variant")
    } else if cells.all(|&(m, h)| m == 0.0 && h == 0.0) {
        Some("0 for every variant at every value")
    } else {
        None
    }
}

/// How many decades the plotted values (with their bands) must span for a log y axis.
const LOG_Y_DECADES: f64 = 1.5;

/// A curve panel's y axis: linear from 0, or, where every value is positive and they span
/// more than [`LOG_Y_DECADES`] (a p99 of 11 ms beside one of 50 s), logarithmic: values are
/// plotted at their log10 between whole powers of ten, labelled at those powers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YScale {
    /// Whether the axis is logarithmic.
    pub log: bool,
    /// The axis' ends in plotted units (log10 of the value on a log axis).
    pub lo: f64,
    /// See `lo`.
    pub hi: f64,
    /// The largest value, for the tick form of a linear axis.
    top: f64,
}

impl YScale {
    /// The axis for `points`.
    pub fn of(points: &Points) -> YScale {
        let cells = || points.iter().flatten().flatten();
        let top = cells().map(|(m, h)| m + h).fold(0.0, f64::max);
        // The lowest value drawn: a mean, or a band's lower edge where it stays above 0.
        let low = cells()
            .flat_map(|&(m, h)| [m, if m - h > 0.0 { m - h } else { m }])
            .fold(f64::INFINITY, f64::min);
        let positive = cells().all(|(m, _)| *m > 0.0);
        if positive && low.is_finite() && top > 0.0 && (top / low).log10() > LOG_Y_DECADES {
            // 4 % of the span at both ends, so no curve lies on the frame; a span over 1.5
            // decades always holds a whole power of ten to label.
            let (lo, hi) = (low.log10(), top.log10());
            let pad = (hi - lo) * 0.04;
            let (mut lo, hi) = (lo - pad, hi + pad);
            // At least two whole powers of ten to label: 15 ms to 600 ms would read "100"
            // alone, so the foot goes down to 10.
            if hi.floor() - lo.ceil() < 1.0 {
                lo = lo.floor();
            }
            return YScale {
                log: true,
                lo,
                hi,
                top,
            };
        }
        // An all-zero metric still gets a readable axis.
        let hi = if top > 0.0 { top * 1.08 } else { 1.0 };
        YScale {
            log: false,
            lo: 0.0,
            hi,
            top: hi,
        }
    }

    /// Where `value` is plotted: itself, or its log10 (clamped to the axis' foot, so a band
    /// that reaches 0 ends at the bottom of the plot).
    pub fn at(&self, value: f64) -> f64 {
        if self.log {
            if value > 0.0 {
                value.log10().max(self.lo)
            } else {
                self.lo
            }
        } else {
            value
        }
    }

    /// The axis title: `label`, saying "log scale" on a log axis.
    pub fn title(&self, label: &str) -> String {
        if self.log {
            format!("{label}, log scale")
        } else {
            label.to_string()
        }
    }
}

/// Whether numeric sweep values span two decades or more (all positive): a log axis then.
pub fn log_axis(values: Option<&[f64]>) -> bool {
    let Some(values) = values else { return false };
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    lo > 0.0 && hi / lo >= 100.0
}

/// The marker of the variant at `index` (circle, triangle, cross in turn), so coinciding
/// curves still show each variant's points.
fn marker<DB: DrawingBackend>(
    p: (f64, f64),
    index: usize,
    size: i32,
    color: RGBColor,
) -> plotters::element::DynElement<'static, DB, (f64, f64)> {
    match index % 3 {
        0 => Circle::new(p, size, color.filled()).into_dyn(),
        1 => TriangleMarker::new(p, size + 1, color.filled()).into_dyn(),
        _ => Cross::new(p, size, color.stroke_width(2)).into_dyn(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aws-backoff-jitter's p99 axis read "100k" above "10000": a log axis' powers of ten
    /// take one form on both axes of a sweep figure.
    /// A sweep where one variant collapses at its higher rate: the p99 caption names it.
    #[test]
    fn a_p99_caption_names_the_variants_that_failed_most() {
        let text = r#"{"name": "s", "duration": "2s", "replications": 2,
            "clients": {"count": 2, "workload": {"open": {"rate_per_s": 50}}},
            "server": {"service_time": {"constant": "1ms"}, "error_rate": 0.2},
            "variants": [{"name": "fine", "patch": {}},
                         {"name": "broken", "patch": {"server": {"error_rate": 0.9}}}],
            "sweep": {"path": "clients.workload.open.rate_per_s", "values": [50, 100]}}"#;
        let opts = crate::scenario::LoadOptions::default();
        let experiment = crate::scenario::load_str(text, "s", &opts).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        let caption = LATENCY_P99.caption(&run);
        assert!(
            caption.contains("as \"broken\" did at some values"),
            "{caption}"
        );
        assert!(!caption.contains("\"fine\""), "{caption}");
        assert!(!WORK.caption(&run).contains("failed more than half"));
    }

    #[test]
    fn a_curve_flat_for_every_variant_is_left_out() {
        let at = |m: f64| Some((m, 0.1));
        assert!(flat(&vec![vec![at(40.0), at(40.2)], vec![at(40.1), None]]));
        assert!(!flat(&vec![
            vec![at(40.0), at(41.0)],
            vec![at(40.1), at(40.0)]
        ]));
        assert!(
            !flat(&vec![vec![None, None]]),
            "nothing drawn is not a flat line"
        );
    }

    #[test]
    fn log_ticks_take_one_form() {
        let x = x_labels(Vec::new(), true, true, |_: &f64| String::new());
        let labels: Vec<String> = [3.0, 4.0, 5.0, 4.5].iter().map(&x).collect();
        assert_eq!(labels, ["1k", "10k", "100k", ""]);
    }

    #[test]
    fn a_sweep_over_two_decades_gets_a_log_axis() {
        assert!(log_axis(Some(&[10.0, 100.0, 1000.0])));
        assert!(!log_axis(Some(&[10.0, 50.0, 100.0])));
        assert!(!log_axis(Some(&[0.0, 10.0, 1000.0])));
        assert!(!log_axis(None));
    }

    /// tail-at-scale's p99 latencies: hedging at 11 ms beside no hedging at 1 s and a budget
    /// up to 50 s. On a linear axis everything under a second sits on the floor.
    #[test]
    fn latencies_from_milliseconds_to_seconds_get_a_log_y_axis() {
        let p99: Points = vec![
            vec![
                Some((1001.0, 3.0)),
                Some((1002.0, 4.0)),
                Some((50_000.0, 900.0)),
            ],
            vec![
                Some((11.2, 0.3)),
                Some((12.9, 0.5)),
                Some((10_159.0, 5526.0)),
            ],
        ];
        let y = YScale::of(&p99);
        assert!(y.log);
        assert!(
            y.lo < 10.9f64.log10() && y.lo > 0.8,
            "just under 10.9 ms: {y:?}"
        );
        assert!(
            y.hi > 50_900f64.log10() && y.hi < 5.0,
            "just over 50.9 s: {y:?}"
        );
        assert_eq!(y.at(1000.0), 3.0);
        assert_eq!(y.at(0.0), y.lo, "a band down to 0 ends at the foot");
        assert_eq!(
            y.title("p99 latency of successful requests (ms)"),
            "p99 latency of successful requests (ms), log scale"
        );
        // Amplification from 1 to 3: linear, from 0.
        let amp: Points = vec![vec![Some((1.0, 0.0)), Some((3.0, 0.2))]];
        let y = YScale::of(&amp);
        assert!(!y.log);
        assert_eq!(y.lo, 0.0);
        assert_eq!(y.title("amplification"), "amplification");
        // A zero anywhere (no rejections at low load) keeps a linear axis.
        let zero: Points = vec![vec![Some((0.0, 0.0)), Some((500.0, 20.0))]];
        assert!(!YScale::of(&zero).log);
    }

    /// aws-backoff-jitter's wasted, rejected and utilization panels were empty axes.
    /// retry-budget's requests and brooker-2022's "no retries" lay wholly under a later
    /// variant's line: a reader counted four lines and looked for the fifth.
    #[test]
    fn lines_drawn_under_another_are_named() {
        let line = |v: f64| vec![Some((v, 0.0)); 3];
        let names = ["a", "b", "c"];
        let all = vec![line(5.0), line(5.0), line(5.0)];
        let y = YScale::of(&all);
        assert_eq!(hidden_under(&all, &y), vec![(0, 2), (1, 2)]);
        assert_eq!(
            covered_words(&hidden_under(&all, &y), 3, &names, true),
            " (all coincide)"
        );
        let one = vec![line(1.0), line(4.0), line(1.0)];
        let y = YScale::of(&one);
        let hidden = hidden_under(&one, &y);
        assert_eq!(hidden, vec![(0, 2)]);
        assert_eq!(
            covered_words(&hidden, 3, &names, false),
            " (a drawn under c)"
        );
        assert_eq!(covered_words(&hidden, 3, &names, true), " (1 hidden)");
        let apart = vec![line(1.0), line(2.0), line(3.0)];
        assert!(hidden_under(&apart, &YScale::of(&apart)).is_empty());
        let mut gap = line(1.0);
        gap[1] = None;
        let gaps = vec![gap, line(1.0)];
        assert!(
            hidden_under(&gaps, &YScale::of(&gaps)).is_empty(),
            "a gap shows"
        );
    }

    /// A log axis from 15 ms to 600 ms labelled "100" alone: nothing to read a bar against.
    #[test]
    fn a_log_axis_labels_two_powers_of_ten_at_least() {
        let y = YScale::of(&vec![vec![Some((15.0, 0.0)), Some((600.0, 0.0))]]);
        assert!(y.log);
        let labelled = (y.lo.ceil() as i32..=y.hi.floor() as i32).count();
        assert!(labelled >= 2, "{y:?}");
        assert_eq!(y.lo, 1.0);
    }

    #[test]
    fn a_panel_with_nothing_to_draw_says_why() {
        let zeros: Points = vec![vec![Some((0.0, 0.0)); 3]; 4];
        assert_eq!(
            nothing_to_show(&zeros),
            Some("0 for every variant at every value")
        );
        let gaps: Points = vec![vec![None; 3]; 2];
        assert_eq!(nothing_to_show(&gaps), Some("applies to no variant"));
        let some: Points = vec![vec![Some((0.0, 0.0)), Some((2.0, 0.1))]];
        assert_eq!(nothing_to_show(&some), None);
    }
}
