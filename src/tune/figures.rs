//! The tune's figures: each pair of objectives with the front drawn (worst case over the
//! suite and mean over it, side by side on shared axes), and the front's candidates at each
//! fault of the suite. Each is drawn from the table written beside it as CSV.

use anyhow::Result;
use plotters::prelude::*;

use super::file::Tune;
use super::front::{Found, Standing, Value};
use super::race::Searched;
use crate::report::OutputFile;
use crate::report::charts::canvas::{self, Area, Drawn};
use crate::report::charts::style::{FONT, range_ticks, span, variant_color};
use crate::report::charts::{Drawing, ImageFormat, encode};

/// The most front candidates the suite figure draws, each in its own colour.
const SHOWN: usize = 8;

/// Figure files, and each figure's (stem, caption) for report.md.
pub type Figures = (Vec<OutputFile>, Vec<(String, String)>);

/// Every figure of a tune, each image with its CSV, and the captions for report.md.
pub fn figures(tune: &Tune, s: &Searched, found: &Found, format: ImageFormat) -> Result<Figures> {
    let mut files = Vec::new();
    let mut captions = Vec::new();
    let k = tune.objectives.len();
    for a in 0..k {
        for b in a + 1..k {
            let fig = PairFigure {
                tune,
                found,
                x: a,
                y: b,
            };
            let stem = format!("front-{}-{}", a + 1, b + 1);
            files.push(OutputFile::new(
                format!("{stem}.{}", format.extension()),
                encode(&fig, (1100, 560), format)?,
            ));
            files.push(OutputFile::new(format!("{stem}.csv"), fig.csv()?));
            captions.push((stem, format!(
                "{} against {}: every other candidate that ran to the end (grey; a ring where it breaks a constraint), the front (blue, with 95 % intervals), the recommendation ringed; left the worst fault of the suite, right the mean over it.",
                tune.objectives[b].measure.label, tune.objectives[a].measure.label
            )));
        }
    }
    let fig = SuiteFigure { tune, s, found };
    let height = 120 + 260 * k as u32;
    files.push(OutputFile::new(
        format!("front-over-faults.{}", format.extension()),
        encode(&fig, (1100, height), format)?,
    ));
    files.push(OutputFile::new("front-over-faults.csv", fig.csv()?));
    captions.push(("front-over-faults".into(), "Each front candidate at each fault of the suite, with 95 % intervals: where each setting pays and where it holds.".into()));
    Ok((files, captions))
}

/// Objective `y` against objective `x`.
struct PairFigure<'a> {
    tune: &'a Tune,
    found: &'a Found,
    x: usize,
    y: usize,
}

/// The candidates a pair figure draws: every one that ran to the end.
fn finished(found: &Found) -> Vec<usize> {
    (0..found.standing.len())
        .filter(|&c| !matches!(found.standing[c], Standing::Dropped(_)))
        .collect()
}

impl PairFigure<'_> {
    fn csv(&self) -> Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let (mx, my) = (
            &self.tune.objectives[self.x].measure,
            &self.tune.objectives[self.y].measure,
        );
        w.write_record([
            "candidate",
            "settings",
            "standing",
            "over",
            mx.key.as_str(),
            &format!("{}_ci95", mx.key),
            my.key.as_str(),
            &format!("{}_ci95", my.key),
        ])?;
        for c in finished(self.found) {
            for (over, v) in [("worst", &self.found.worst), ("mean", &self.found.mean)] {
                let (Some(a), Some(b)) = (v[c][self.x], v[c][self.y]) else {
                    continue;
                };
                w.write_record([
                    c.to_string(),
                    self.tune.label(c),
                    self.found.standing[c].word().to_string(),
                    over.to_string(),
                    a.value.to_string(),
                    a.half_width.to_string(),
                    b.value.to_string(),
                    b.half_width.to_string(),
                ])?;
            }
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// The shared axes of both panels, in printed units.
    fn ranges(&self) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
        let (sx, sy) = (
            self.tune.objectives[self.x].measure.scale,
            self.tune.objectives[self.y].measure.scale,
        );
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for c in finished(self.found) {
            for v in [&self.found.worst, &self.found.mean] {
                if let (Some(a), Some(b)) = (v[c][self.x], v[c][self.y]) {
                    let (mx, my) = (
                        &self.tune.objectives[self.x].measure,
                        &self.tune.objectives[self.y].measure,
                    );
                    let (x0, x1) = bounded(
                        mx,
                        (a.value - a.half_width) * sx,
                        (a.value + a.half_width) * sx,
                    );
                    let (y0, y1) = bounded(
                        my,
                        (b.value - b.half_width) * sy,
                        (b.value + b.half_width) * sy,
                    );
                    xs.extend([x0, x1]);
                    ys.extend([y0, y1]);
                }
            }
        }
        (padded(&xs), padded(&ys))
    }

    fn panel<DB: DrawingBackend>(
        &self,
        area: &Area<DB>,
        of: &[Vec<Option<Value>>],
        front: &[usize],
        title: &str,
    ) -> Result<()> {
        let (mx, my) = (
            &self.tune.objectives[self.x].measure,
            &self.tune.objectives[self.y].measure,
        );
        let (rx, ry) = self.ranges();
        let (tx, ty) = (range_ticks(&rx), range_ticks(&ry));
        let mut chart = ChartBuilder::on(area)
            .caption(title, (FONT, 17))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(76)
            .build_cartesian_2d(rx, ry)
            .drawn()?;
        chart
            .configure_mesh()
            .x_desc(mx.title())
            .y_desc(my.title())
            .x_label_formatter(&tx)
            .y_label_formatter(&ty)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE)
            .draw()
            .drawn()?;
        let at = |c: usize| -> Option<(f64, f64, Value, Value)> {
            let (a, b) = (of[c][self.x]?, of[c][self.y]?);
            Some((a.value * mx.scale, b.value * my.scale, a, b))
        };
        let grey = RGBColor(160, 160, 160);
        let breaks = |c: &usize| matches!(self.found.standing[*c], Standing::Breaks { .. });
        for c in finished(self.found)
            .into_iter()
            .filter(|c| !front.contains(c))
        {
            let Some((x, y, _, _)) = at(c) else { continue };
            let style = if breaks(&c) {
                grey.stroke_width(2)
            } else {
                grey.filled()
            };
            chart.draw_series([Circle::new((x, y), 4, style)]).drawn()?;
        }
        let blue = variant_color(0);
        let mut line: Vec<(f64, f64)> = front
            .iter()
            .filter_map(|&c| at(c))
            .map(|(x, y, _, _)| (x, y))
            .collect();
        line.sort_by(|p, q| p.0.total_cmp(&q.0));
        chart
            .draw_series(LineSeries::new(line, blue.stroke_width(1)))
            .drawn()?;
        for &c in front {
            let Some((x, y, a, b)) = at(c) else { continue };
            let (hx, hy) = (a.half_width * mx.scale, b.half_width * my.scale);
            let ((x0, x1), (y0, y1)) = (bounded(mx, x - hx, x + hx), bounded(my, y - hy, y + hy));
            chart
                .draw_series([
                    PathElement::new(vec![(x0, y), (x1, y)], blue.stroke_width(1)),
                    PathElement::new(vec![(x, y0), (x, y1)], blue.stroke_width(1)),
                ])
                .drawn()?;
            chart
                .draw_series([Circle::new((x, y), 5, blue.filled())])
                .drawn()?;
            if Some(c) == self.found.recommended {
                chart
                    .draw_series([Circle::new((x, y), 10, BLACK.stroke_width(2))])
                    .drawn()?;
            }
        }
        Ok(())
    }
}

/// An interval cut where the measure cannot go: a share below 0 % or above 100 %, a count
/// or a latency below 0.
fn bounded(m: &super::measure::Measure, lo: f64, hi: f64) -> (f64, f64) {
    let top = if m.unit == crate::metrics::Unit::Percent {
        100.0
    } else {
        f64::INFINITY
    };
    (lo.max(0.0), hi.min(top))
}

/// A range around `xs` with 6 % room each side.
fn padded(xs: &[f64]) -> std::ops::Range<f64> {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.06).max(hi.abs() * 1e-3).max(1e-9);
    span(lo - pad, hi + pad)
}

impl Drawing for PairFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<()> {
        let title = format!(
            "{}: {} against {} ({} candidates ran to the end, {} on the front)",
            self.tune.name,
            self.tune.objectives[self.y].measure.label,
            self.tune.objectives[self.x].measure.label,
            finished(self.found).len(),
            self.found.front.len()
        );
        let body = canvas::titled(root, &title, 44, 19)?;
        let (left, right) = body.split_horizontally(body.dim_in_pixel().0 / 2);
        self.panel(
            &left,
            &self.found.worst,
            &self.found.front,
            "worst fault of the suite",
        )?;
        self.panel(
            &right,
            &self.found.mean,
            &self.found.mean_front,
            "mean over the suite",
        )
    }
}

/// Each front candidate at each fault, one panel per objective.
struct SuiteFigure<'a> {
    tune: &'a Tune,
    s: &'a Searched,
    found: &'a Found,
}

impl SuiteFigure<'_> {
    fn shown(&self) -> &[usize] {
        &self.found.front[..self.found.front.len().min(SHOWN)]
    }

    fn value(&self, c: usize, f: usize, o: usize) -> Option<Value> {
        let m = self
            .s
            .measures
            .iter()
            .position(|x| *x == self.tune.objectives[o].measure)?;
        self.found.values[c][f][m]
    }

    fn csv(&self) -> Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(["candidate", "settings", "fault", "metric", "value", "ci95"])?;
        for &c in self.shown() {
            for (f, fault) in self.tune.faults.iter().enumerate() {
                for (o, objective) in self.tune.objectives.iter().enumerate() {
                    let Some(v) = self.value(c, f, o) else {
                        continue;
                    };
                    w.write_record([
                        c.to_string(),
                        self.tune.label(c),
                        fault.clone(),
                        objective.measure.key.clone(),
                        v.value.to_string(),
                        v.half_width.to_string(),
                    ])?;
                }
            }
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
    }

    fn panel<DB: DrawingBackend>(&self, area: &Area<DB>, o: usize) -> Result<()> {
        let m = &self.tune.objectives[o].measure;
        let faults = self.tune.faults.len();
        let shown = self.shown();
        let mut ys = Vec::new();
        for &c in shown {
            for f in 0..faults {
                if let Some(v) = self.value(c, f, o) {
                    let (lo, hi) = bounded(
                        m,
                        (v.value - v.half_width) * m.scale,
                        (v.value + v.half_width) * m.scale,
                    );
                    ys.extend([lo, hi]);
                }
            }
        }
        let ry = padded(&ys);
        let ty = range_ticks(&ry);
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(76)
            .build_cartesian_2d(-0.5..faults as f64 - 0.5, ry)
            .drawn()?;
        let names = self.tune.faults.clone();
        chart
            .configure_mesh()
            .x_labels(faults)
            .x_label_formatter(&|x: &f64| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(m.title())
            .y_label_formatter(&ty)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE)
            .draw()
            .drawn()?;
        let width = 0.5 / shown.len().max(1) as f64;
        for (i, &c) in shown.iter().enumerate() {
            let color = variant_color(i);
            let dx = (i as f64 - (shown.len() as f64 - 1.0) / 2.0) * width;
            for f in 0..faults {
                let Some(v) = self.value(c, f, o) else {
                    continue;
                };
                let (x, y, h) = (f as f64 + dx, v.value * m.scale, v.half_width * m.scale);
                let (lo, hi) = bounded(m, y - h, y + h);
                chart
                    .draw_series([PathElement::new(
                        vec![(x, lo), (x, hi)],
                        color.stroke_width(2),
                    )])
                    .drawn()?;
                chart
                    .draw_series([Circle::new((x, y), 5, color.filled())])
                    .drawn()?;
            }
        }
        Ok(())
    }
}

impl Drawing for SuiteFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<()> {
        let more = self.found.front.len().saturating_sub(SHOWN);
        let title = format!(
            "{}: the front at each fault{}",
            self.tune.name,
            if more > 0 {
                format!(" (the first {SHOWN} of {})", self.found.front.len())
            } else {
                String::new()
            }
        );
        let body = canvas::titled(root, &title, 44, 19)?;
        let keys: Vec<canvas::Key> = self
            .shown()
            .iter()
            .enumerate()
            .map(|(i, &c)| canvas::Key {
                label: format!(
                    "{}{}",
                    self.tune.label(c),
                    if Some(c) == self.found.recommended {
                        " (recommended)"
                    } else {
                        ""
                    }
                ),
                color: variant_color(i),
                mark: canvas::Mark::Swatch,
            })
            .collect();
        let body = canvas::legend(&body, &keys)?;
        if self.shown().is_empty() {
            return canvas::nothing_to_show(&body, "no candidate is on the front", 18);
        }
        let panels = body.split_evenly((self.tune.objectives.len(), 1));
        for (o, panel) in panels.iter().enumerate() {
            self.panel(panel, o)?;
        }
        Ok(())
    }
}
