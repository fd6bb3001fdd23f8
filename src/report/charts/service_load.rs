//! A call graph's load per service over time: a panel per service, every panel on one time
//! axis and one y scale (they are compared), a line per variant of the attempts the service
//! received per second, in the variant's colour and dash. The trigger windows are shaded as in
//! the other over-time figures. Only a run with calls below the entry gets this figure.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn};
use super::over_time::{self, Frame, Line, PanelSpec, Row, Series, YAxis};
use super::style::variant_color;
use super::{Chart, Run, triggers};
use crate::metrics::Column;
use crate::report::shape;
use crate::scenario::Variant;

/// The colour of a panel's title: panels are services, not variants.
const TITLE: RGBColor = RGBColor(40, 40, 40);

/// The service-load figure.
pub struct ServiceLoad;

/// Whether the run gets the call-graph figures: some variant at the focus point has calls
/// below the entry ([`shape::has_calls`]).
pub fn applies(run: &Run) -> bool {
    let point = run.experiment.points.get(run.focus());
    point.is_some_and(|p| shape::any_has_calls(p.variants.iter().map(|v| &v.scenario)))
}

/// The services the panels show, in order: the services of every variant with calls, by
/// name, the first variant's first (the entry on top), with whether each is an entry.
pub fn services(ran: &[Variant]) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for v in ran.iter().filter(|v| shape::has_calls(&v.scenario)) {
        for (i, s) in v.scenario.services.iter().enumerate() {
            match out.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, entry)) => *entry |= i == 0,
                None => out.push((s.name.clone(), i == 0)),
            }
        }
    }
    out
}

impl Chart for ServiceLoad {
    type Table = Series;

    fn stem(&self) -> &'static str {
        "service-load-over-time"
    }

    fn applies(&self, run: &Run) -> bool {
        applies(run)
    }

    fn caption(&self, _run: &Run) -> String {
        "Attempts each service of the call graph received per second, a panel per service on one time axis and one scale, a line per variant: where the retries of the callers above pile up, and for how long after the trigger.".to_string()
    }

    /// Panels are services here, with the variants' legend above them.
    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(services(run.ran()).len(), 150, 110)
    }

    /// `service, variant, bucket_start_s, bucket_s, attempts_per_s` (and `trigger`), a row
    /// per display bucket of each variant at each service, the rates drawn.
    fn table(&self, run: &Run) -> Result<Series> {
        let ran = run.ran();
        let windows = run.windows();
        // Every (service, variant) series that exists, in panel order, on one frame.
        let mut lines = Vec::new();
        let mut series: Vec<(&[Row], f64)> = Vec::new();
        let mut group = Vec::new();
        for (name, _) in services(ran) {
            for (j, (v, r)) in run.point().variants.iter().zip(ran).enumerate() {
                let Some(i) = r.scenario.services.iter().position(|x| x.name == name) else {
                    continue;
                };
                let shown = v
                    .service_series
                    .get(i)
                    .filter(|_| shape::has_calls(&r.scenario));
                if let Some(rows) = shown {
                    lines.push(Line {
                        row: lines.len(),
                        variant: j,
                        key: vec![name.clone(), v.name.clone()],
                        windows: windows.get(j).cloned().unwrap_or_default(),
                    });
                    series.push((rows.rows.as_slice(), rows.bucket.as_secs_f64()));
                    group.push(j);
                }
            }
        }
        let (columns, cells) = over_time::values(&[Column::Attempts]);
        Ok(Series {
            frame: Frame::sharing_ends(&series, &group),
            keys: vec!["service", "variant"],
            lines,
            columns,
            cells,
            trigger: windows.iter().any(|w| !w.is_empty()),
        })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let frame = &table.frame;
        let title = format!(
            "{}: attempts each service received per second{} ({}{}; a line per variant",
            run.name(),
            run.at(),
            frame.bucket_words(),
            run.mean_of(),
        );
        let body = over_time::titled(root, title, table.trigger, 17)?;
        let variants = &run.point().variants;
        let body = canvas::legend(&body, &canvas::variant_keys(variants, true))?;
        // Every trigger window of any variant, on every panel: the clients and the entry meet
        // them, and every service behind the entry feels them.
        let mut bands: Vec<(f64, f64)> = run.windows().into_iter().flatten().collect();
        bands.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        bands.dedup();
        // One scale for every panel.
        let col = Column::Attempts as usize;
        let top = frame.max(|r| r[col]).max(1e-9) * 1.1;
        let services = services(run.ran());
        let areas = body.split_evenly((services.len().max(1), 1));
        for (s, ((name, entry), area)) in services.iter().zip(&areas).enumerate() {
            let title = if *entry {
                format!("{name} (entry)")
            } else {
                name.clone()
            };
            let y = YAxis::linear(top);
            let spec = PanelSpec::new(&title, TITLE, y, "attempts (/s)", s + 1 == services.len());
            let mut chart = over_time::panel(area, frame, &spec)?;
            chart
                .draw_series(triggers::bands(&bands, frame.x1, (0.0, top)))
                .drawn()?;
            for line in table.lines.iter().filter(|l| l.key[0] == *name) {
                let j = line.variant;
                let points: Vec<(f64, f64)> = frame.rows[line.row]
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (frame.start(i) + frame.bucket / 2.0, r[col]))
                    .collect();
                let width = if variants[j].is_truncated() { 1 } else { 2 };
                let line = canvas::variant_line(points, j, variant_color(j), width);
                chart.draw_series(std::iter::once(line)).drawn()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::Column;
    use crate::report::fixture::{SERVICES, graph_run};
    use crate::scenario::LoadOptions;

    /// The figure's CSV is the table it drew: per service and variant, its rates times the
    /// display bucket add up to the attempts of the service's mean series.
    #[test]
    fn the_service_load_csv_adds_up_to_each_services_series() {
        let (experiment, result) = graph_run(&LoadOptions::default());
        let figures =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1).unwrap();
        let figure = figures
            .iter()
            .find(|f| f.stem == "service-load-over-time")
            .unwrap();
        let png = image::load_from_memory(&figure.image).unwrap();
        assert!(png.height() >= 150 * SERVICES.len() as u32);
        let mut reader = csv::Reader::from_reader(figure.csv.as_slice());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(
            header,
            [
                "service",
                "variant",
                "bucket_start_s",
                "bucket_s",
                "attempts_per_s",
                "trigger"
            ]
        );
        let mut sums = std::collections::BTreeMap::<(String, String), f64>::new();
        for r in reader.records().map(Result::unwrap) {
            let x: f64 = r[4].parse::<f64>().unwrap() * r[3].parse::<f64>().unwrap();
            *sums
                .entry((r[0].to_string(), r[1].to_string()))
                .or_default() += x;
        }
        assert_eq!(sums.len(), SERVICES.len() * result.points[0].variants.len());
        for v in &result.points[0].variants {
            for (name, series) in SERVICES.iter().zip(&v.service_series) {
                let total: f64 = series
                    .rows
                    .iter()
                    .map(|r| r[Column::Attempts as usize])
                    .sum();
                let drawn = sums[&(name.to_string(), v.name.clone())];
                assert!(
                    (drawn - total).abs() <= 1e-9 * total.max(1.0),
                    "{name}: {drawn} vs {total}"
                );
            }
        }
    }

    #[test]
    fn a_single_server_gets_no_graph_figure() {
        let text = r#"{"name": "s", "duration": "1s",
          "clients": {"count": 3, "workload": {"open": {"rate_per_s": 20}}},
          "server": {"concurrency": 1, "service_time": {"constant": "10ms"}}}"#;
        let experiment = crate::scenario::load_str(text, "s", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let stems: Vec<String> =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1)
                .unwrap()
                .into_iter()
                .map(|f| f.stem)
                .collect();
        assert!(
            !stems
                .iter()
                .any(|s| s == "call-graph" || s == "service-load-over-time"),
            "{stems:?}"
        );
    }
}
