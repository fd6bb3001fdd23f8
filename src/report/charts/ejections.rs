//! Replicas ejected over time, a panel per variant whose callers detect outliers
//! (`outlier_detection`): the replicas out of their callers' balancers at the end of each
//! bucket, mean of the replications, every caller's added up, as bars on one time axis and one
//! scale, with the scenario's triggers (a crashed replica's fault window) shaded in light red.
//! It shows when a replica is taken out, how long it stays out, and the ejections that grow
//! longer while it keeps failing. A run where no replica was ejected gets no figure; a variant
//! without outlier detection gets no panel.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{Area, Drawn};
use super::over_time::{self, Frame, Line, PanelSpec, Series, YAxis};
use super::style::variant_color;
use super::{Chart, Run};
use crate::metrics::{Column, ServiceMetric};

/// The ejections figure.
pub struct Ejections;

/// The positions of the variants at the focus point whose callers detect outliers.
fn detecting(run: &Run) -> Vec<usize> {
    run.ran()
        .iter()
        .enumerate()
        .filter(|(_, v)| v.scenario.detects_outliers())
        .map(|(j, _)| j)
        .collect()
}

impl Chart for Ejections {
    type Table = Series;

    fn stem(&self) -> &'static str {
        "ejections"
    }

    fn applies(&self, run: &Run) -> bool {
        run.point().variants.iter().any(|v| {
            v.metrics
                .replicas
                .iter()
                .any(|r| ServiceMetric::EJECTIONS.value(r) > 0.0)
        })
    }

    fn caption(&self, run: &Run) -> String {
        let mut caption = "Replicas out of their callers' balancers over time (mean of the replications at the end of each bucket, every caller's added up): a replica that keeps failing is let back after each ejection and taken out again for longer. Variants without outlier detection have no panel.".to_string();
        // Only a share above half can leave fewer than half the replicas in.
        let may_panic = run.ran().iter().any(|v| {
            v.scenario
                .services
                .iter()
                .filter_map(|s| s.server.pool.outlier)
                .any(|o| o.max_ejection_percent > 50)
        });
        if may_panic {
            caption.push_str(" Where fewer than half a pool's replicas are in, their caller balances over all of them, ejected or not (Envoy's panic threshold).");
        }
        caption
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(detecting(run).len(), 130, 66)
    }

    fn table(&self, run: &Run) -> Result<Series> {
        let variants: Vec<_> = run.point().variants.iter().collect();
        let windows = run.windows();
        let lines = detecting(run)
            .into_iter()
            .map(|j| Line {
                row: j,
                variant: j,
                key: vec![variants[j].name.clone()],
                windows: windows.get(j).cloned().unwrap_or_default(),
            })
            .collect();
        let (names, cells) = over_time::values(&[Column::Ejected]);
        Ok(Series {
            frame: Frame::of(&variants),
            keys: vec!["variant"],
            lines,
            columns: names,
            cells,
            trigger: windows.iter().any(|w| !w.is_empty()),
        })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        let frame = &table.frame;
        let title = format!(
            "{}: replicas ejected{} (at the end of each of the {}",
            run.name(),
            run.at(),
            frame.bucket_words(),
        );
        let body = over_time::titled(root, title, table.trigger, 17)?;
        let ejected = |r: &over_time::Row| r[Column::Ejected as usize];
        let top = table
            .lines
            .iter()
            .flat_map(|l| &frame.rows[l.row])
            .map(ejected)
            .fold(0.0, f64::max)
            .max(1.0);
        let y = YAxis::linear(top * 1.15);
        let areas = body.split_evenly((table.lines.len().max(1), 1));
        for (i, (line, area)) in table.lines.iter().zip(&areas).enumerate() {
            let v = &variants[line.variant];
            let color = variant_color(line.variant);
            let title = over_time::panel_title(v);
            let last = i + 1 == table.lines.len();
            let spec = PanelSpec::new(&title, color, y, "replicas ejected", last);
            let mut chart = over_time::panel(area, frame, &spec)?;
            chart
                .draw_series(super::triggers::bands(
                    &line.windows,
                    frame.x1,
                    (y.lo, y.hi),
                ))
                .drawn()?;
            let mix = if v.is_truncated() { 0.3 } else { 0.65 };
            let rows = &frame.rows[line.row];
            chart
                .draw_series(over_time::bars(
                    frame,
                    rows,
                    |_| 0.0,
                    ejected,
                    color.mix(mix).filled(),
                ))
                .drawn()?;
            if rows.iter().all(|r| ejected(r) == 0.0) {
                let words = why_none(&run.ran()[line.variant].scenario);
                super::canvas::nothing_to_show(area, &words, 14)?;
            }
        }
        Ok(())
    }
}

/// Why a variant's panel is empty, in words: its `max_ejection_percent` of a pool may allow
/// less than one replica out (Envoy's rule, without `always_eject_one_host`).
fn why_none(scenario: &crate::scenario::Scenario) -> String {
    let none_allowed = scenario.services.iter().find_map(|s| {
        let pool = s.server.pool;
        let o = pool.outlier?;
        let allowed = 100 <= u64::from(o.max_ejection_percent) * u64::from(pool.replicas);
        (!allowed && !o.always_eject_one_host).then(|| {
            format!(
                "no replica was ejected: {} % of {} replicas is less than one, and always_eject_one_host is off",
                o.max_ejection_percent, pool.replicas
            )
        })
    });
    none_allowed.unwrap_or_else(|| "no replica was ejected".to_string())
}
