//! The latency distribution of successful logical requests per variant, as a cumulative
//! distribution on a log time axis, with each variant's p50 and p99 marked where its curve
//! reaches 50 % and 99 % (the exact values, pooled over replications, are in the legend). Failed requests are not in the curves, or a
//! policy that fails fast would look fast: the legend gives each variant's failure share.
//! A curve that another, drawn after it, covers exactly says so in its legend entry.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn};
use super::latency;
use super::style::{FONT, variant_color};
use super::{Chart, Run, Table};
use crate::metrics::{LATENCY_BINS, latency_bin_upper_ms};

/// The latency CDF figure.
pub struct LatencyCdf;

/// A variant's name, its requests per latency bin and its curve: (upper edge in ms, share
/// of requests at or below it) per bin.
type Curve = (String, Vec<f64>, Vec<(f64, f64)>);

/// Every variant's curve.
pub struct Curves(Vec<Curve>);

impl Table for Curves {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        w.write_record([
            "variant",
            "latency_ms_at_most",
            "requests",
            "cumulative_fraction",
        ])?;
        for (name, bins, curve) in &self.0 {
            for ((edge, cdf), n) in curve.iter().zip(bins).filter(|(_, n)| **n > 0.0) {
                w.write_record([name, &edge.to_string(), &n.to_string(), &cdf.to_string()])?;
            }
        }
        Ok(())
    }
}

impl Chart for LatencyCdf {
    type Table = Curves;

    fn stem(&self) -> &'static str {
        "latency"
    }

    fn caption(&self, run: &Run) -> String {
        let mut caption = String::from(if run.can_degrade() {
            "How long answered requests took (successes and, in this call graph, the requests a fallback answered alike: a fast fallback makes a variant look fast), start to answer, as a cumulative distribution on a log axis (every replication's requests pooled); dots mark where each curve reaches 50 % and 99 % (on the step of the bin that holds the p50 and p99; 20 bins per decade), the legend the exact p50 and p99 and the share of failed requests, which the curves leave out."
        } else {
            "How long successful requests took, start to success, as a cumulative distribution on a log axis (every replication's requests pooled); dots mark where each curve reaches 50 % and 99 % (on the step of the bin that holds the p50 and p99; 20 bins per decade), the legend the exact p50 and p99 and the share of failed requests, which the curves leave out so that failing fast does not look fast."
        });
        let table = self.table(run);
        if table.is_ok_and(|t| (0..t.0.len()).any(|j| under(&t, j).is_some())) {
            caption.push_str(" Where two variants' curves lie within half a percentage point of each other everywhere, the one drawn first lies under the other, and its legend entry says so.");
        }
        caption
    }

    fn table(&self, run: &Run) -> Result<Curves> {
        let curves = run.point().variants.iter().map(|v| {
            let bins = &v.success_latency_bins;
            let total: f64 = bins.iter().sum();
            let mut acc = 0.0;
            let curve = (0..LATENCY_BINS)
                .map(|i| {
                    acc += bins[i];
                    let share = if total > 0.0 { acc / total } else { 0.0 };
                    (latency_bin_upper_ms(i), share)
                })
                .collect();
            (v.name.clone(), bins.to_vec(), curve)
        });
        Ok(Curves(curves.collect()))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Curves, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        let can_degrade = run.can_degrade();
        // The x range: where any variant has requests, shared with the histogram.
        let (first, last) = latency::x_range(variants);
        let (lo, hi) = latency::x_span((first, last));
        let title = format!(
            "{}: latency of {}{}",
            run.name(),
            latency::latency_of(can_degrade),
            run.at()
        );
        let body = canvas::titled(root, &title, 48, 20)?;
        // The legend sits above the plot, never over the curves. A curve starts at the share
        // it has reached at the axis' left edge, so requests left of the axis need no note.
        let mut keys = canvas::variant_keys(variants, true);
        for (j, (key, v)) in keys.iter_mut().zip(variants).enumerate() {
            if v.metrics.succeeded == 0.0 {
                key.label
                    .push_str(&format!(" ({})", latency::no_requests(can_degrade)));
            } else {
                let mut notes = vec![quantiles(v)];
                notes.extend(latency::failed_share(v));
                notes.extend(under(table, j).map(|k| format!("drawn under {}", table.0[k].0)));
                key.label.push_str(&format!(" ({})", notes.join(", ")));
            }
        }
        let plot = canvas::legend(&body, &keys)?;
        if let Some(words) = latency::nothing_to_show(variants, can_degrade) {
            return canvas::nothing_to_show(&plot, words, 18);
        }
        let mut chart = ChartBuilder::on(&plot)
            .margin(16)
            .margin_top(8)
            .x_label_area_size(52)
            .y_label_area_size(72)
            .build_cartesian_2d(super::style::log_span(lo, hi).log_scale(), 0.0..1.0)
            .drawn()?;
        chart
            .configure_mesh()
            .x_desc(latency::x_desc(can_degrade))
            .y_desc(if can_degrade {
                "share of answers at or below"
            } else {
                "share of successes at or below"
            })
            .x_label_formatter(&latency::log_tick)
            .x_labels(30)
            .y_label_formatter(&|y| format!("{:.0} %", y * 100.0))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .drawn()?;
        for (j, (v, (_, _, curve))) in variants.iter().zip(&table.0).enumerate() {
            let color = variant_color(j);
            if v.metrics.succeeded == 0.0 {
                // No success, no distribution: the legend says so, and nothing is drawn at 0.
                continue;
            }
            let steps = steps(curve, first, lo, hi);
            chart
                .draw_series(std::iter::once(canvas::variant_line(steps, j, color, 3)))
                .drawn()?;
            // Where the drawn curve reads 50 % and 99 %: on its riser, not at the exact
            // quantile, which lies somewhere inside the bin (the legend gives it).
            let marks = [0.5, 0.99].map(|q| on_riser(curve, q).map(|x| (x, q)));
            chart
                .draw_series(
                    marks
                        .into_iter()
                        .flatten()
                        .filter(|(x, _)| *x >= lo && *x <= hi)
                        .map(|p| Circle::new(p, 6, color.filled())),
                )
                .drawn()?;
        }
        Ok(())
    }
}

/// How far apart (in share of requests) two curves may lie at most, everywhere, to be drawn
/// one over the other: less than the width of a line.
const COINCIDE: f64 = 0.005;

/// The last curve drawn after curve `j` that lies within [`COINCIDE`] of it everywhere,
/// which covers it; none for a curve of no requests.
fn under(table: &Curves, j: usize) -> Option<usize> {
    let requests = |k: usize| table.0[k].1.iter().any(|n| *n > 0.0);
    let close = |k: &usize| {
        let (a, b) = (&table.0[j].2, &table.0[*k].2);
        requests(*k) && a.iter().zip(b).all(|(a, b)| (a.1 - b.1).abs() < COINCIDE)
    };
    requests(j).then(|| (j + 1..table.0.len()).rev().find(close))?
}

/// "p50 12.3 ms, p99 480 ms": a variant's exact quantiles, for its legend entry.
fn quantiles(v: &crate::metrics::VariantResult) -> String {
    let l = &v.metrics.success_latency_ms;
    format!(
        "p50 {} ms, p99 {} ms",
        super::tick(&l.p50),
        super::tick(&l.p99)
    )
}

/// Where the step curve reaches the share `q`: the upper edge of the first bin at which the
/// cumulative share is `q` or more, so a dot drawn there at `q` sits on the riser. `None`
/// for a curve that never gets there (no requests).
fn on_riser(curve: &[(f64, f64)], q: f64) -> Option<f64> {
    // A share accumulated in floating point may fall a hair short of 0.99 at the right bin.
    curve
        .iter()
        .find(|(_, share)| *share >= q - 1e-12)
        .map(|(edge, _)| *edge)
}

/// A curve's points from `lo` to `hi`. The share is known exactly at bin edges only, so the
/// curve is drawn as steps that rise at each bin's upper edge: a quantile inside a bin then
/// sits on the riser, never on an interpolated slope that no data supports.
fn steps(curve: &[(f64, f64)], first: usize, lo: f64, hi: f64) -> Vec<(f64, f64)> {
    let start = if first > 0 { curve[first - 1].1 } else { 0.0 };
    let mut steps: Vec<(f64, f64)> = vec![(lo, start)];
    let mut level = start;
    for &(edge, share) in curve.iter().filter(|(edge, _)| *edge >= lo && *edge <= hi) {
        if share != level {
            steps.push((edge, level));
            steps.push((edge, share));
            level = share;
        }
    }
    steps.push((hi, level));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{LoadOptions, load_str};

    /// collapse-after-spike's dots sat left of the riser: each dot is now a point of the
    /// drawn steps, at the bin edge where the CSV's cumulative share reaches 50 % and 99 %.
    #[test]
    fn the_p50_and_p99_dots_sit_on_the_drawn_curve() {
        let text = r#"{"name": "s", "duration": "5s", "seed": 3,
          "clients": {"count": 5, "workload": {"open": {"rate_per_s": 200}}},
          "server": {"concurrency": 2, "service_time": {"exponential": {"mean": "5ms"}}}}"#;
        let experiment = load_str(text, "s", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        let table = LatencyCdf.table(&run).unwrap();
        let (_, _, curve) = &table.0[0];
        let (first, last) = latency::x_range(&run.point().variants);
        let (lo, hi) = latency::x_span((first, last));
        let drawn = steps(curve, first, lo, hi);
        for q in [0.5, 0.99] {
            let x = on_riser(curve, q).unwrap();
            // A vertical segment of the steps at x spans q.
            let on = drawn
                .windows(2)
                .any(|w| w[0].0 == x && w[1].0 == x && w[0].1 < q && w[1].1 >= q - 1e-12);
            assert!(on, "q {q} at {x}: {drawn:?}");
            // The exact quantile is inside the bin whose upper edge is x.
            let exact = if q == 0.5 {
                run.point().variants[0].metrics.success_latency_ms.p50
            } else {
                run.point().variants[0].metrics.success_latency_ms.p99
            };
            assert!(
                exact <= x * 1.0001 && exact >= x / 10f64.powf(1.0 / 20.0) * 0.9999,
                "{exact} vs {x}"
            );
        }
        assert!(quantiles(&run.point().variants[0]).starts_with("p50 "));
    }

    /// hotos-metastable's "no budget" lay hidden under the same "backoff" curve: the curve
    /// drawn first names the one that covers it.
    #[test]
    fn a_curve_covered_by_a_coinciding_one_names_it() {
        let curve = |name: &str, bins: [f64; 3]| {
            let total: f64 = bins.iter().sum();
            let mut acc = 0.0;
            let shares = bins.iter().enumerate().map(|(i, n)| {
                acc += n;
                (i as f64, if total > 0.0 { acc / total } else { 0.0 })
            });
            (name.to_string(), bins.to_vec(), shares.collect())
        };
        let table = Curves(vec![
            curve("no budget", [0.0, 3000.0, 1000.0]),
            curve("backoff", [0.0, 3001.0, 1000.0]),
            curve("lifo", [0.0, 1.0, 3.0]),
            curve("again", [0.0, 300.0, 100.0]),
            curve("none", [0.0; 3]),
            curve("none either", [0.0; 3]),
        ]);
        let under: Vec<Option<usize>> = (0..6).map(|j| under(&table, j)).collect();
        assert_eq!(under, [Some(3), Some(3), None, None, None, None]);
    }

    /// retry-chapter's servers fail every attempt: the figure says so instead of empty axes.
    #[test]
    fn a_run_without_a_success_says_so_on_the_latency_figures() {
        let text = r#"{"name": "f", "duration": "2s",
          "clients": {"count": 3, "workload": {"open": {"rate_per_s": 20}}},
          "server": {"concurrency": 1, "service_time": {"constant": "10ms"}, "error_rate": 1}}"#;
        let experiment = load_str(text, "f", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let variants = &result.points[0].variants;
        assert_eq!(
            latency::nothing_to_show(variants, false),
            Some("No request succeeded in any variant: there is no latency to draw.")
        );
        let figures =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1).unwrap();
        let cdf = figures.iter().find(|f| f.stem == "latency").unwrap();
        // The CSV holds the header alone: nothing was drawn.
        assert_eq!(String::from_utf8_lossy(&cdf.csv).lines().count(), 1);
    }
}
