//! A metric against the swept value: a line per variant, with its 95 % confidence band. With
//! a two-axis sweep, against the first axis at the second axis' focus value.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

use super::style::{FONT, tick, variant_color};
use crate::metrics::Metric;
use crate::report;
use crate::runner::ExperimentResult;
use crate::scenario::Experiment;

/// Draws the curves of `metric` (in its printed unit) and returns their CSV.
pub fn draw<DB: DrawingBackend>(
    experiment: &Experiment,
    result: &ExperimentResult,
    metric: &Metric,
    label: &str,
    compact: bool,
    root: &DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let sweep = experiment
        .sweep
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("a sweep curve needs a sweep"))?;
    // Numeric sweep values are plotted at their value; others at their position.
    let numeric: Option<Vec<f64>> = sweep.values.iter().map(Value::as_f64).collect();
    let xs: Vec<f64> = numeric
        .clone()
        .unwrap_or_else(|| (0..sweep.values.len()).map(|i| i as f64).collect());
    let names: Vec<String> = result.points[0]
        .variants
        .iter()
        .map(|v| v.name.clone())
        .collect();
    let line = sweep.first_axis_points();
    let at = super::second_axis_at(experiment);
    // curves[variant][point] = (mean, half-width), scaled.
    let curves: Vec<Vec<(f64, f64)>> = (0..names.len())
        .map(|j| {
            line.iter()
                .map(|&k| {
                    let v = &result.points[k].variants[j];
                    super::estimate(metric, v)
                })
                .collect()
        })
        .collect();

    let mut w = csv::Writer::from_writer(Vec::new());
    // With two axes, the second axis' value follows the first's in every row.
    let second = sweep.second.as_ref().map(|s| {
        (
            s.path.as_str(),
            report::value_text(Some(&s.values[s.focus()])),
        )
    });
    let mut header = vec![sweep.path.as_str()];
    header.extend(second.as_ref().map(|(path, _)| *path));
    header.extend(["variant", label, "ci95"]);
    w.write_record(&header)?;
    for (j, name) in names.iter().enumerate() {
        for (i, (mean, half)) in curves[j].iter().enumerate() {
            let mut record = vec![report::value_text(Some(&sweep.values[i]))];
            record.extend(second.as_ref().map(|(_, y)| y.clone()));
            record.extend([name.clone(), mean.to_string(), half.to_string()]);
            w.write_record(&record)?;
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    // A little room at both ends: 3 % of the range for numeric values (a failure rate from 0
    // to 1 as well as a client count), half a step for values plotted at their position.
    let pad = if numeric.is_some() && x1 > x0 {
        (x1 - x0) * 0.03
    } else {
        0.5
    };
    let top = curves
        .iter()
        .flatten()
        .map(|(m, h)| m + h)
        .fold(0.0, f64::max);
    // An all-zero metric still gets a readable axis.
    let top = if top > 0.0 { top * 1.08 } else { 1.0 };
    // Compact: one panel of a grid, titled by its metric, the legend drawn once outside.
    let (title, title_size, margin, x_area, y_area, font) = if compact {
        (label.to_string(), 15, 6, 24, 56, 12)
    } else {
        (
            format!("{}: {label}{at}", experiment.name),
            24,
            16,
            52,
            80,
            16,
        )
    };
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, title_size))
        .margin(margin)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area)
        .build_cartesian_2d((x0 - pad)..(x1 + pad), 0.0..top)
        .map_err(err)?;
    let values = sweep.values.clone();
    let is_numeric = numeric.is_some();
    let x_label = move |x: &f64| -> String {
        if is_numeric {
            tick(x)
        } else {
            values
                .get(x.round() as usize)
                .map_or(String::new(), |v| v.to_string())
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&x_label)
        .y_label_formatter(&tick)
        .x_labels(if compact { 5 } else { 10 })
        .y_labels(if compact { 4 } else { 10 })
        .label_style((FONT, font))
        .axis_desc_style((FONT, 18))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08));
    if !compact {
        mesh.x_desc(sweep.path.as_str()).y_desc(label);
    }
    mesh.draw().map_err(err)?;
    for (j, name) in names.iter().enumerate() {
        let color = variant_color(j);
        let upper = xs.iter().zip(&curves[j]).map(|(x, (m, h))| (*x, m + h));
        let lower = xs
            .iter()
            .zip(&curves[j])
            .map(|(x, (m, h))| (*x, (m - h).max(0.0)));
        let band: Vec<(f64, f64)> = upper.chain(lower.rev()).collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                color.mix(0.18).filled(),
            )))
            .map_err(err)?;
        let line: Vec<(f64, f64)> = xs
            .iter()
            .zip(&curves[j])
            .map(|(x, (m, _))| (*x, *m))
            .collect();
        chart
            .draw_series(LineSeries::new(
                line.clone(),
                color.stroke_width(if compact { 2 } else { 3 }),
            ))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
        chart
            .draw_series(
                line.iter()
                    .map(|p| Circle::new(*p, if compact { 2 } else { 3 }, color.filled())),
            )
            .map_err(err)?;
    }
    if !compact {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font((FONT, 16))
            .draw()
            .map_err(err)?;
    }
    Ok(csv)
}
