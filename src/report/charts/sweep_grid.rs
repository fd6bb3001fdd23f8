//! Every headline metric against the swept value, one small panel each, with one legend. With
//! a two-axis sweep, against the first axis at the second axis' focus value. A metric with
//! the same value for every variant at every point (aws-backoff-jitter's 100 % success) says
//! so in words instead of drawing flat lines.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area};
use super::style::tick;
use super::sweep_curves::{self, Points};
use super::{Chart, Run, Table};
use crate::metrics::Metric;
use crate::report::value_text;

/// The panels. Latency is the latency of successful requests.
const PANELS: [Metric; 12] = [
    Metric::REQUESTS,
    Metric::SUCCESS_RATE,
    Metric::ATTEMPTS,
    Metric::RETRIES,
    Metric::AMPLIFICATION,
    Metric::SUCCESS_P50,
    Metric::SUCCESS_P99,
    Metric::COMPLETION,
    Metric::SERVED,
    Metric::WASTED,
    Metric::REJECTED,
    Metric::UTILIZATION,
];

/// The sweep grid figure.
pub struct SweepGrid;

/// The grid's table, in long format: the axes' paths, each first-axis point's values, the
/// variants' names, and per panel its title and curves.
pub struct Grid {
    paths: Vec<String>,
    values: Vec<Vec<String>>,
    names: Vec<String>,
    panels: Vec<(String, Points)>,
}

impl Table for Grid {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        let mut header: Vec<&str> = self.paths.iter().map(String::as_str).collect();
        header.extend(["variant", "metric", "mean", "ci95"]);
        w.write_record(&header)?;
        let cell = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
        for (i, values) in self.values.iter().enumerate() {
            for (j, name) in self.names.iter().enumerate() {
                for (title, points) in &self.panels {
                    let e = points[j][i];
                    let mut record = values.clone();
                    record.extend([name.clone(), title.clone()]);
                    record.extend([cell(e.map(|e| e.0)), cell(e.map(|e| e.1))]);
                    w.write_record(&record)?;
                }
            }
        }
        Ok(())
    }
}

impl Chart for SweepGrid {
    type Table = Grid;

    fn stem(&self) -> &'static str {
        "sweep-metrics"
    }

    fn applies(&self, run: &Run) -> bool {
        run.experiment.sweep.is_some()
    }

    fn caption(&self, run: &Run) -> String {
        sweep_curves::against_first_axis(
            "Every headline metric against the swept value, a line per variant with its 95 % band (all metrics with their intervals are in sweep.csv). A panel says how many lines are hidden: drawn within 1 % of its height of a later variant's line at every value, so only the later one shows.",
            run,
        )
    }

    fn size(&self, _run: &Run) -> (u32, u32) {
        (super::SIZE.0, 820)
    }

    fn table(&self, run: &Run) -> Result<Grid> {
        let sweep = run
            .experiment
            .sweep
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a sweep grid needs a sweep"))?;
        // With two axes, the second axis' value follows the first's in every row.
        let second = sweep.second.as_ref();
        let mut paths = vec![sweep.path.clone()];
        paths.extend(second.map(|s| s.path.clone()));
        let values = sweep.first_axis_points().into_iter().map(|k| {
            let mut values = vec![value_text(run.result.points[k].value.as_ref())];
            if second.is_some() {
                values.push(value_text(run.experiment.points[k].second_value.as_ref()));
            }
            values
        });
        let can_degrade = run.can_degrade();
        let panels = PANELS.iter().map(|k| {
            let title = super::metric_title(k, can_degrade);
            (title, sweep_curves::points(run, k))
        });
        Ok(Grid {
            paths,
            values: values.collect(),
            names: run.variants().iter().map(|v| v.name.clone()).collect(),
            panels: panels.collect(),
        })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Grid, root: &Area<DB>) -> Result<()> {
        let title = format!(
            "{}: every metric against {}{}",
            run.name(),
            run.experiment
                .sweep
                .as_ref()
                .map_or("", |s| s.label.as_str()),
            super::second_axis_at(run.experiment)
        );
        let body = canvas::titled(root, &title, 40, 20)?;
        let grid = canvas::legend(&body, &canvas::variant_keys(run.variants(), true))?;
        for ((title, points), area) in table.panels.iter().zip(grid.split_evenly((3, 4))) {
            let Some(value) = same_everywhere(points) else {
                sweep_curves::plot(run, points, title, true, &area)?;
                continue;
            };
            let (band, body) = area.split_vertically(24);
            canvas::draw_title(&band, title, 15)?;
            let words = format!("{} for every variant at every value", tick(&value));
            canvas::nothing_to_show(&body, &words, 14)?;
        }
        Ok(())
    }
}

/// The value of a metric that has the same one, without an interval, for every variant at
/// every point; `None` where some differ or the metric does not apply somewhere.
pub fn same_everywhere(points: &Points) -> Option<f64> {
    let (first, _) = (*points.iter().flatten().next()?)?;
    let same = points.iter().flatten().all(|c| *c == Some((first, 0.0)));
    same.then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aws-backoff-jitter's success was 100 % for every variant at every number of clients:
    /// a panel of flat lines that carried no information.
    #[test]
    fn a_metric_the_same_everywhere_is_said_in_words() {
        let all = |cell| vec![vec![cell; 3]; 2];
        assert_eq!(same_everywhere(&all(Some((100.0, 0.0)))), Some(100.0));
        assert_eq!(same_everywhere(&all(Some((0.0, 0.0)))), Some(0.0));
        assert_eq!(
            same_everywhere(&all(Some((100.0, 0.1)))),
            None,
            "an interval"
        );
        assert_eq!(same_everywhere(&all(None)), None);
        let mut differ = all(Some((100.0, 0.0)));
        differ[1][2] = Some((99.0, 0.0));
        assert_eq!(same_everywhere(&differ), None);
        differ[1][2] = None;
        assert_eq!(same_everywhere(&differ), None, "a gap");
    }
}
