//! Theory beside simulation: where a closed form describes a variant exactly (see
//! [`crate::report::theory`]), a row per prediction with the simulated mean as a dot, its
//! 95 % interval as a whisker and the prediction as a black line across the row. A row's axis
//! is zoomed around its prediction, so a reader sees at once whether the interval covers the
//! line and how far apart they are in the quantity's own unit; rows differ in unit and are
//! never compared with each other.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn};
use super::style::{FONT, INK, variant_color};
use super::{Chart, Run, Table};
use crate::report::theory::{Check, checks};

/// Height of one prediction's row, in pixels.
const ROW: u32 = 100;
/// Height of the title band, in pixels.
const TITLE: u32 = 44;
/// Width of the words on the left of each row, in pixels.
const WORDS: u32 = 400;

/// The theory figure.
pub struct TheoryCheck;

/// One row, in the printed unit of its quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    variant: usize,
    name: String,
    quantity: String,
    formula: &'static str,
    theory: f64,
    mean: f64,
    half: f64,
    inside: bool,
    /// Decimals that the numbers are printed with (one more than tables give the metric).
    decimals: usize,
}

impl Row {
    fn of(c: &Check) -> Row {
        let k = c.prediction.metric;
        Row {
            variant: c.variant,
            name: super::display_name(c.result),
            quantity: k.title(),
            formula: c.prediction.formula,
            theory: c.prediction.value * k.scale,
            mean: c.mean * k.scale,
            half: c.half * k.scale,
            inside: c.inside(),
            decimals: k.decimals + 1,
        }
    }

    /// Whether every replication gave the prediction exactly: no spread, no difference.
    fn exact(&self) -> bool {
        self.half == 0.0 && self.mean == self.theory
    }

    /// The row's axis: centred on the prediction, wide enough for the interval and the mean
    /// with a margin, and never narrower than a thousandth of the prediction or a unit of the
    /// last printed decimal (so that a near match is not a magnified speck of noise).
    fn span(&self) -> std::ops::Range<f64> {
        let reach = (self.mean - self.theory).abs() + self.half;
        let last_decimal = 10f64.powi(-(self.decimals as i32));
        let floor = (self.theory.abs() * 1e-3).max(last_decimal);
        let half_width = (reach * 1.4).max(floor);
        self.theory - half_width..self.theory + half_width
    }
}

/// The rows of a run's theory figure.
pub struct Rows(Vec<Row>);

impl Table for Rows {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        w.write_record([
            "variant",
            "quantity",
            "formula",
            "theory",
            "simulated",
            "ci95",
            "inside",
        ])?;
        for r in &self.0 {
            let [theory, mean, half] = [r.theory, r.mean, r.half].map(|x| x.to_string());
            let inside = if r.inside { "yes" } else { "no" };
            w.write_record([
                &r.name,
                &r.quantity,
                r.formula,
                &theory,
                &mean,
                &half,
                inside,
            ])?;
        }
        Ok(())
    }
}

/// The rows of the focus point's variants.
fn rows(run: &Run) -> Vec<Row> {
    let scenarios = run.ran().iter().map(|v| &v.scenario);
    checks(scenarios, &run.point().variants)
        .iter()
        .map(Row::of)
        .collect()
}

impl Chart for TheoryCheck {
    type Table = Rows;

    fn stem(&self) -> &'static str {
        "theory"
    }

    fn applies(&self, run: &Run) -> bool {
        !rows(run).is_empty()
    }

    fn caption(&self, _run: &Run) -> String {
        "Theory beside simulation: a row per prediction of a closed form, the black line the prediction, the dot the simulated mean and the whisker its 95 % interval. Each row's axis is zoomed around its prediction; a whisker that misses the line is marked \"outside\" (about 1 row in 20 is, by chance alone).".to_string()
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        (super::SIZE.0, TITLE + ROW * rows(run).len() as u32 + 12)
    }

    fn table(&self, run: &Run) -> Result<Rows> {
        Ok(Rows(rows(run)))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Rows, root: &Area<DB>) -> Result<()> {
        let title = format!("{}: theory beside simulation{}", run.name(), run.at());
        let body = canvas::titled(root, &title, TITLE, 20)?;
        let areas = body.split_evenly((table.0.len().max(1), 1));
        for (row, area) in table.0.iter().zip(&areas) {
            draw_row(area, row)?;
        }
        Ok(())
    }
}

/// The row's numbers and whether they agree, in words.
fn verdict(r: &Row) -> String {
    let d = r.decimals;
    if r.exact() {
        return format!(
            "theory {:.d$} · simulated {:.d$} in every replication: exact",
            r.theory, r.mean
        );
    }
    let side = if r.inside { "inside" } else { "outside" };
    format!(
        "theory {:.d$} · simulated {:.d$} ± {:.d$}: {side}",
        r.theory, r.mean, r.half
    )
}

/// The decimals that keep about seven ticks across `span` apart: one more than the
/// step's first significant digit needs.
fn tick_decimals(span: std::ops::Range<f64>) -> usize {
    let step = (span.end - span.start) / 7.0;
    (-step.log10().floor()).clamp(0.0, 12.0) as usize
}

/// One prediction: its words on the left, its axis with the line, the dot and the whisker on
/// the right.
fn draw_row<DB: DrawingBackend>(area: &Area<DB>, r: &Row) -> Result<()> {
    let (words, plot) = area.split_horizontally(WORDS);
    let color = variant_color(r.variant);
    let left = |size| TextStyle::from((FONT, size).into_font());
    words
        .draw(&Text::new(r.name.clone(), (16, 10), left(16).color(&color)))
        .drawn()?;
    words
        .draw(&Text::new(
            r.quantity.clone(),
            (16, 32),
            left(14).color(&INK),
        ))
        .drawn()?;
    words
        .draw(&Text::new(
            r.formula,
            (16, 52),
            left(12).color(&INK.mix(0.7)),
        ))
        .drawn()?;
    words
        .draw(&Text::new(verdict(r), (16, 72), left(13).color(&INK)))
        .drawn()?;
    let mut chart = ChartBuilder::on(&plot)
        .margin_right(24)
        .margin_top(8)
        .x_label_area_size(24)
        .build_cartesian_2d(r.span(), 0.0..1.0)
        .drawn()?;
    chart
        .configure_mesh()
        .disable_y_axis()
        .disable_y_mesh()
        // An exact match has nothing to measure on the axis: a dot on the line says it.
        .x_labels(if r.exact() { 0 } else { 7 })
        .x_label_formatter(&|x| format!("{x:.*}", tick_decimals(r.span())))
        .x_label_style((FONT, 12))
        .light_line_style(WHITE)
        .draw()
        .drawn()?;
    let line = vec![(r.theory, 0.0), (r.theory, 1.0)];
    chart
        .draw_series([PathElement::new(line, INK.stroke_width(2))])
        .drawn()?;
    let (lo, hi) = (r.mean - r.half, r.mean + r.half);
    let whisker = ErrorBar::new_horizontal(0.45, lo, r.mean, hi, color.stroke_width(2), 10);
    chart.draw_series([whisker]).drawn()?;
    chart
        .draw_series([Circle::new((r.mean, 0.45), 5, color.filled())])
        .drawn()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(theory: f64, mean: f64, half: f64) -> Row {
        Row {
            variant: 0,
            name: "v".into(),
            quantity: "q".into(),
            formula: "f",
            theory,
            mean,
            half,
            inside: (mean - theory).abs() <= half,
            decimals: 2,
        }
    }

    #[test]
    fn a_row_shows_its_prediction_its_mean_and_its_interval() {
        // The axis is centred on the prediction and holds the whole interval.
        for r in [
            row(50.0, 49.95, 0.46),
            row(17.455, 17.486, 0.069),
            row(4.0, 4.0, 0.0),
        ] {
            let span = r.span();
            assert!((span.start + span.end) / 2.0 - r.theory < 1e-9);
            assert!(
                span.start < r.mean - r.half && r.mean + r.half < span.end,
                "{span:?}"
            );
            assert!(span.start < r.theory && r.theory < span.end);
        }
        // An exact match is a dot on the line, on an axis a thousandth of the value wide,
        // or a unit of the last decimal printed where that is wider (a prediction of 0).
        let exact = row(40.0, 40.0, 0.0);
        assert!(exact.exact() && !row(40.0, 40.0, 1e-6).exact());
        let span = exact.span();
        assert!((span.end - span.start - 0.08).abs() < 1e-12, "{span:?}");
        let zero = row(0.0, 0.0, 0.0).span();
        assert!((zero.end - zero.start - 0.02).abs() < 1e-12, "{zero:?}");
        // Ticks never repeat: with about seven across, neighbours differ in the last decimal.
        for r in [
            row(17.455, 17.486, 0.069),
            row(12.6, 12.64, 0.09),
            row(4.0, 4.0, 0.0),
        ] {
            let span = r.span();
            let d = tick_decimals(span.clone());
            let step = (span.end - span.start) / 7.0;
            let text = |x: f64| format!("{x:.d$}");
            assert_ne!(text(span.start), text(span.start + step), "{span:?} at {d}");
        }
    }
}
