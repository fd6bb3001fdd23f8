//! A metric against the swept value: a line per variant, with its 95 % confidence band. With
//! a two-axis sweep, against the first axis at the second axis' focus value.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

use super::style::{FONT, axis_ticks, tick, variant_color};
use crate::metrics::ExperimentResult;
use crate::metrics::Metric;
use crate::report;
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
    // curves[variant][point] = (mean, half-width), scaled; `None` where the metric does not
    // apply (success latency where nothing succeeded): a gap in the line, an empty CSV cell.
    let curves: Vec<Vec<Option<(f64, f64)>>> = (0..names.len())
        .map(|j| {
            line.iter()
                .map(|&k| {
                    let v = &result.points[k].variants[j];
                    metric.estimate(&v.metrics, &v.ci95)
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
        for (i, cell) in curves[j].iter().enumerate() {
            let mut record = vec![report::value_text(Some(&sweep.values[i]))];
            record.extend(second.as_ref().map(|(_, y)| y.clone()));
            let (mean, half) = cell.map_or((String::new(), String::new()), |(m, h)| {
                (m.to_string(), h.to_string())
            });
            record.extend([name.clone(), mean, half]);
            w.write_record(&record)?;
        }
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    // Numeric values spanning two decades or more (clients 10, 100, 1000) go on a log axis,
    // else the small ones crowd at the left: plotted at their log10, labelled at powers of 10.
    let log = log_axis(numeric.as_deref());
    let xs: Vec<f64> = if log {
        xs.iter().map(|x| x.log10()).collect()
    } else {
        xs
    };
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
        .flatten()
        .map(|(m, h)| m + h)
        .fold(0.0, f64::max);
    // An all-zero metric still gets a readable axis.
    let top = if top > 0.0 { top * 1.08 } else { 1.0 };
    // Compact: one panel of a grid, titled by its metric, the legend drawn once outside.
    // Full size: the title on its own band (wrapped when long) and the legend above the plot,
    // never over the lines.
    let (margin, x_area, y_area, font) = if compact {
        (6, 24, 56, 12)
    } else {
        (16, 52, 80, 16)
    };
    let plot = if compact {
        root.clone()
    } else {
        let (title_area, rest) = root.split_vertically(52);
        super::draw_title(
            &title_area,
            &format!("{}: {label}{at}", experiment.name),
            22,
        )?;
        let keys = super::variant_keys(&result.points[0].variants, true);
        let (legend_area, plot) =
            rest.split_vertically(super::legend_height(&keys, root.dim_in_pixel().0));
        super::draw_legend(&legend_area, &keys)?;
        plot
    };
    let mut builder = ChartBuilder::on(&plot);
    if compact {
        builder.caption(label, (FONT, 15));
    }
    let mut chart = builder
        .margin(margin)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area)
        .build_cartesian_2d(
            super::style::span(x0 - pad, x1 + pad),
            super::style::span(0.0, top),
        )
        .map_err(err)?;
    let values = sweep.values.clone();
    let is_numeric = numeric.is_some();
    let x_ticks = axis_ticks(x0.abs().max(x1.abs()));
    let x_label = move |x: &f64| -> String {
        if log {
            // Only whole powers of ten are labelled.
            if (x - x.round()).abs() < 1e-6 {
                tick(&10f64.powf(x.round()))
            } else {
                String::new()
            }
        } else if is_numeric {
            x_ticks(x)
        } else {
            values
                .get(x.round() as usize)
                .map_or(String::new(), |v| v.to_string())
        }
    };
    let y_ticks = axis_ticks(top);
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&x_label)
        .y_label_formatter(&y_ticks)
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
    if !compact {
        mesh.x_desc(x_desc.as_str()).y_desc(label);
    }
    mesh.draw().map_err(err)?;
    for (j, curve) in curves.iter().enumerate() {
        let color = variant_color(j);
        // One band and line per run of points where the metric applies.
        let points: Vec<Option<(f64, f64, f64)>> = xs
            .iter()
            .zip(curve)
            .map(|(x, c)| c.map(|(m, h)| (*x, m, h)))
            .collect();
        for run in points.split(Option::is_none) {
            let run: Vec<(f64, f64, f64)> = run.iter().flatten().copied().collect();
            if run.is_empty() {
                continue;
            }
            let upper = run.iter().map(|(x, m, h)| (*x, m + h));
            let lower = run.iter().map(|(x, m, h)| (*x, (m - h).max(0.0)));
            let band: Vec<(f64, f64)> = upper.chain(lower.rev()).collect();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    band,
                    color.mix(0.18).filled(),
                )))
                .map_err(err)?;
            let line: Vec<(f64, f64)> = run.iter().map(|(x, m, _)| (*x, *m)).collect();
            chart
                .draw_series(std::iter::once(super::variant_line(
                    line.clone(),
                    j,
                    color,
                    if compact { 2 } else { 3 },
                )))
                .map_err(err)?;
            let size = if compact { 3 } else { 5 };
            chart
                .draw_series(line.iter().map(|p| marker(*p, j, size, color)))
                .map_err(err)?;
        }
    }
    Ok(csv)
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

    #[test]
    fn a_sweep_over_two_decades_gets_a_log_axis() {
        assert!(log_axis(Some(&[10.0, 100.0, 1000.0])));
        assert!(!log_axis(Some(&[10.0, 50.0, 100.0])));
        assert!(!log_axis(Some(&[0.0, 10.0, 1000.0])));
        assert!(!log_axis(None));
    }
}
