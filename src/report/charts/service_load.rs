//! A call graph's load per service over time: a panel per service, every panel on one time
//! axis and one y scale (they are compared), a line per variant of the attempts the service
//! received per second, in the variant's colour and dash. The trigger windows are shaded as in
//! the other over-time figures. Only call graphs get this figure.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::over_time::{self, Frame, PanelSpec, Row};
use super::style::variant_color;
use super::triggers;
use crate::metrics::Column;
use crate::metrics::ExperimentResult;
use crate::scenario::{Experiment, Variant};

/// The colour of a panel's title: panels are services, not variants.
const TITLE: RGBColor = RGBColor(40, 40, 40);

/// Whether the run gets this figure: some variant at the focus point is a call graph.
pub fn applies(experiment: &Experiment) -> bool {
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    experiment
        .points
        .get(focus)
        .is_some_and(|p| p.variants.iter().any(|v| v.scenario.is_graph()))
}

/// The services the panels show, in order: every call-graph variant's services by name, the
/// first variant's first (the entry on top), with whether each is an entry.
pub fn services(ran: &[Variant]) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for v in ran.iter().filter(|v| v.scenario.is_graph()) {
        for (i, s) in v.scenario.services.iter().enumerate() {
            match out.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, entry)) => *entry |= i == 0,
                None => out.push((s.name.clone(), i == 0)),
            }
        }
    }
    out
}

/// The number of panels: one per service.
pub fn panel_count(experiment: &Experiment) -> usize {
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    experiment
        .points
        .get(focus)
        .map_or(0, |p| services(&p.variants).len())
}

/// Draws the panels and returns their CSV: `service, variant, bucket_start_s, bucket_s,
/// attempts_per_s` (and `trigger`), a row per display bucket of each variant at each service,
/// the rates drawn.
pub fn draw<DB: DrawingBackend>(
    experiment: &Experiment,
    result: &ExperimentResult,
    root: &DrawingArea<DB, Shift>,
) -> anyhow::Result<Vec<u8>>
where
    DB::ErrorType: 'static,
{
    let (point, at) = super::focus_point(experiment, result);
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let ran = &experiment.points[focus].variants;
    let windows = triggers::windows(ran);
    let services = services(ran);
    // Every (service, variant) series that exists, in panel order, on one frame.
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut series: Vec<(&[Row], f64)> = Vec::new();
    for (s, (name, _)) in services.iter().enumerate() {
        for (j, (v, r)) in point.variants.iter().zip(ran).enumerate() {
            let Some(i) = r.scenario.services.iter().position(|x| x.name == *name) else {
                continue;
            };
            if let Some(rows) = v.service_series.get(i).filter(|_| r.scenario.is_graph()) {
                lines.push((s, j));
                series.push((rows.rows.as_slice(), rows.bucket.as_secs_f64()));
            }
        }
    }
    let frame = Frame::new(&series);
    let col = Column::Attempts as usize;
    let csv = write_csv(&frame, &services, &point.variants, &lines, &windows)?;

    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e}");
    root.fill(&WHITE).map_err(err)?;
    let any_trigger = windows.iter().any(|w| !w.is_empty());
    let reps = if experiment.replications > 1 {
        format!(", mean of {} replications", experiment.replications)
    } else {
        String::new()
    };
    let (title_area, body) = root.split_vertically(48);
    super::draw_title(
        &title_area,
        &format!(
            "{}: attempts each service received per second{at} ({}{reps}; a line per variant{})",
            experiment.name,
            frame.bucket_words(),
            if any_trigger {
                "; red band: trigger"
            } else {
                ""
            }
        ),
        17,
    )?;
    let keys = super::variant_keys(&point.variants, true);
    let (legend_area, body) = body.split_vertically(super::legend_height(&keys, super::SIZE.0));
    super::draw_legend(&legend_area, &keys)?;
    // Every trigger window of any variant, on every panel: the clients and the entry meet
    // them, and every service behind the entry feels them.
    let mut bands: Vec<(f64, f64)> = windows.iter().flatten().copied().collect();
    bands.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    bands.dedup();
    // One scale for every panel.
    let top = frame.max(|r| r[col]).max(1e-9) * 1.1;
    let areas = body.split_evenly((services.len().max(1), 1));
    for (s, ((name, entry), area)) in services.iter().zip(&areas).enumerate() {
        let title = if *entry {
            format!("{name} (entry)")
        } else {
            name.clone()
        };
        let mut chart = over_time::panel(
            area,
            &frame,
            &PanelSpec {
                title: &title,
                color: TITLE,
                top,
                y_desc: "attempts (/s)",
                y_format: None,
                right: None,
                last: s + 1 == services.len(),
            },
        )?;
        chart
            .draw_series(triggers::bands(&bands, frame.x1, top))
            .map_err(err)?;
        for (k, &(panel, j)) in lines.iter().enumerate() {
            if panel != s {
                continue;
            }
            let points: Vec<(f64, f64)> = frame.rows[k]
                .iter()
                .enumerate()
                .map(|(i, r)| (frame.start(i) + frame.bucket / 2.0, r[col]))
                .collect();
            let width = if super::is_truncated(&point.variants[j]) {
                1
            } else {
                2
            };
            chart
                .draw_series(std::iter::once(super::variant_line(
                    points,
                    j,
                    variant_color(j),
                    width,
                )))
                .map_err(err)?;
        }
    }
    Ok(csv)
}

/// The CSV: the frame's rows, each named by its service and variant.
fn write_csv(
    frame: &Frame,
    services: &[(String, bool)],
    variants: &[crate::metrics::VariantResult],
    lines: &[(usize, usize)],
    windows: &[Vec<(f64, f64)>],
) -> anyhow::Result<Vec<u8>> {
    let any_trigger = windows.iter().any(|w| !w.is_empty());
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head = vec![
        "service",
        "variant",
        "bucket_start_s",
        "bucket_s",
        "attempts_per_s",
    ];
    if any_trigger {
        head.push("trigger");
    }
    w.write_record(&head)?;
    for (&(s, j), rows) in lines.iter().zip(&frame.rows) {
        for (i, row) in rows.iter().enumerate() {
            let start = frame.start(i);
            let mut record = vec![
                services[s].0.clone(),
                variants[j].name.clone(),
                start.to_string(),
                frame.bucket.to_string(),
                row[Column::Attempts as usize].to_string(),
            ];
            if any_trigger {
                let inside = windows
                    .get(j)
                    .is_some_and(|w| triggers::overlaps(w, start, start + frame.bucket));
                record.push(u8::from(inside).to_string());
            }
            w.write_record(&record)?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
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
