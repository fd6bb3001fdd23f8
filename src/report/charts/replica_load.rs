//! Load per replica over time, for the variants with a service of more than one replica: a
//! row per variant, on the left the attempts its callers' balancers sent each replica per
//! second, on the right the attempts each replica held (waiting or in service) at each
//! bucket's end; a line per replica, coloured in replica order. Every left panel shares one
//! scale and every right panel another, on one time axis, so the variants' spreads compare at
//! a glance: a crashed replica that its retries keep hitting, or the queues random routing
//! lets grow beside idle replicas. Trigger windows are shaded as in the other over-time
//! figures. Only a run with replicas gets this figure.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn, Key, Mark};
use super::over_time::{self, Frame, Line, PanelSpec, Row, Series, YAxis};
use super::style::variant_color;
use super::{Chart, Run, triggers};
use crate::metrics::Column;
use crate::report::shape;

/// The replica colours' ramp, first replica to last: dark violet, teal, yellow-green (the
/// viridis scale without its palest end, which white would swallow). Replicas are ordered,
/// not variants, so they take a ramp rather than the variants' palette.
const RAMP: [RGBColor; 3] = [
    RGBColor(68, 1, 84),
    RGBColor(33, 145, 140),
    RGBColor(160, 200, 30),
];

/// Replicas a legend names one by one; past this it names the ends of the ramp.
const NAMED: usize = 8;

/// The replica-load figure.
pub struct ReplicaLoad;

/// The colour of replica `k` of `n` on [`RAMP`].
fn replica_color(k: usize, n: usize) -> RGBColor {
    let t = if n > 1 {
        k as f64 / (n - 1) as f64
    } else {
        0.0
    };
    let (a, b, u) = if t <= 0.5 {
        (RAMP[0], RAMP[1], t * 2.0)
    } else {
        (RAMP[1], RAMP[2], t * 2.0 - 1.0)
    };
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * u).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The attempts a replica held at a bucket's end: waiting or in service.
fn held(r: &Row) -> f64 {
    r[Column::QueueLen as usize] + r[Column::InService as usize]
}

/// The variants at the focus point with replicas, by position.
fn pooled(run: &Run) -> Vec<usize> {
    run.ran()
        .iter()
        .enumerate()
        .filter(|(_, v)| shape::has_replicas(&v.scenario))
        .map(|(j, _)| j)
        .collect()
}

/// The replicas of variant `j` at the focus point, as "service #k" (numbered from 0).
fn names(run: &Run, j: usize) -> Vec<String> {
    let sc = &run.ran()[j].scenario;
    sc.replicas()
        .map(|(s, k)| format!("{} #{k}", sc.services[s].name))
        .collect()
}

impl Chart for ReplicaLoad {
    type Table = Series;

    fn stem(&self) -> &'static str {
        "replica-load"
    }

    fn applies(&self, run: &Run) -> bool {
        run.experiment
            .points
            .get(run.focus())
            .is_some_and(|p| shape::any_has_replicas(p.variants.iter().map(|v| &v.scenario)))
    }

    fn caption(&self, _run: &Run) -> String {
        "Load per replica over time, a row per variant with replicas: the attempts its callers' balancers sent each replica per second (left, counted when sent), and the attempts each replica held, waiting or in service, at each bucket's end (right); a line per replica, in replica order from dark to light, every left panel on one scale and every right panel on another. Lines that part show load the balancer spread unevenly: retries sent back to a crashed replica, or queues that random routing lets grow beside idle replicas.".to_string()
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(pooled(run).len(), 170, 120)
    }

    /// `variant, service, replica, bucket_start_s, bucket_s, attempts_per_s, held` (and
    /// `trigger`), a row per display bucket of each replica of each variant with replicas,
    /// the values drawn.
    fn table(&self, run: &Run) -> Result<Series> {
        let windows = run.windows();
        let variants = &run.point().variants;
        let mut lines = Vec::new();
        let mut series: Vec<(&[Row], f64)> = Vec::new();
        let mut group = Vec::new();
        for j in pooled(run) {
            let sc = &run.ran()[j].scenario;
            let v = &variants[j];
            for ((s, k), rows) in sc.replicas().zip(&v.replica_series) {
                lines.push(Line {
                    row: lines.len(),
                    variant: j,
                    key: vec![v.name.clone(), sc.services[s].name.clone(), k.to_string()],
                    windows: windows.get(j).cloned().unwrap_or_default(),
                });
                series.push((rows.rows.as_slice(), rows.bucket.as_secs_f64()));
                group.push(j);
            }
        }
        let cells = |_: &Line, r: &Row| {
            vec![
                r[Column::Attempts as usize].to_string(),
                held(r).to_string(),
            ]
        };
        Ok(Series {
            frame: Frame::sharing_ends(&series, &group),
            keys: vec!["variant", "service", "replica"],
            lines,
            columns: vec!["attempts_per_s".to_string(), "held".to_string()],
            cells: Box::new(cells),
            trigger: windows.iter().any(|w| !w.is_empty()),
        })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let frame = &table.frame;
        let title = format!(
            "{}: load per replica{} (left: attempts sent to each replica per second; right: attempts it held at the bucket's end; {}{}; a line per replica",
            run.name(),
            run.at(),
            frame.bucket_words(),
            run.mean_of(),
        );
        let body = over_time::titled(root, title, table.trigger, 17)?;
        let pooled = pooled(run);
        let body = canvas::legend(&body, &legend(run, &pooled))?;
        // One scale per column.
        let sent = YAxis::linear(frame.max(|r| r[Column::Attempts as usize]).max(1e-9) * 1.1);
        let holds = YAxis::linear(frame.max(held).max(1e-9) * 1.1);
        let areas = body.split_evenly((pooled.len().max(1), 2));
        let variants = &run.point().variants;
        for (i, &j) in pooled.iter().enumerate() {
            let lines: Vec<&Line> = table.lines.iter().filter(|l| l.variant == j).collect();
            let name = super::display_name(&variants[j]);
            let last = i + 1 == pooled.len();
            let color = variant_color(j);
            let panels = [
                (format!("{name}: attempts sent"), sent, "attempts (/s)"),
                (format!("{name}: attempts held"), holds, "attempts held"),
            ];
            for (c, (title, y, desc)) in panels.into_iter().enumerate() {
                let spec = PanelSpec::new(&title, color, y, desc, last);
                let mut chart = over_time::panel(&areas[2 * i + c], frame, &spec)?;
                let bands = lines.first().map_or(&[][..], |l| &l.windows[..]);
                chart
                    .draw_series(triggers::bands(bands, frame.x1, (0.0, y.hi)))
                    .drawn()?;
                let value = |r: &Row| {
                    if c == 0 {
                        r[Column::Attempts as usize]
                    } else {
                        held(r)
                    }
                };
                for (k, line) in lines.iter().enumerate() {
                    let points: Vec<(f64, f64)> = frame.rows[line.row]
                        .iter()
                        .enumerate()
                        .map(|(b, r)| (frame.start(b) + frame.bucket / 2.0, value(r)))
                        .collect();
                    let style = replica_color(k, lines.len()).stroke_width(2);
                    chart
                        .draw_series(std::iter::once(PathElement::new(points, style)))
                        .drawn()?;
                }
            }
        }
        Ok(())
    }
}

/// The replicas' legend, from the first variant with replicas: every replica by name when
/// there are few, else the first, middle and last, which name the ramp.
fn legend(run: &Run, pooled: &[usize]) -> Vec<Key> {
    let Some(&j) = pooled.first() else {
        return Vec::new();
    };
    let names = names(run, j);
    let n = names.len();
    let shown: Vec<usize> = if n <= NAMED {
        (0..n).collect()
    } else {
        vec![0, n / 2, n - 1]
    };
    shown
        .into_iter()
        .map(|k| Key {
            label: if n > NAMED && k == n / 2 {
                format!("… {} …", names[k])
            } else {
                names[k].clone()
            },
            color: replica_color(k, n),
            mark: Mark::Swatch,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::metrics::Column;
    use crate::scenario::LoadOptions;

    /// A pool of 3 replicas behind a round-robin balancer, one variant sticky: the figure's
    /// CSV is the table it drew, a line per replica whose rates times the display bucket add
    /// up to the attempts the replica's mean series counts, and those add up to the attempts
    /// the clients sent (no network delay, nothing in flight at the end).
    #[test]
    fn the_replica_load_csv_adds_up_to_each_replicas_series_and_to_the_attempts_sent() {
        let text = r#"{"name": "pool", "seed": 3, "replications": 2, "duration": "4s",
          "clients": {"count": 2, "workload": {"open": {"rate_per_s": 300}}},
          "server": {"concurrency": 2, "service_time": {"exponential": {"mean": "2ms"}},
                     "replicas": 3, "balancer": "round_robin",
                     "faults": [{"from": "1s", "to": "2s", "outage": "reject", "replica": 1}]},
          "policy": {"retry": {"max_attempts": 2}},
          "metrics": {"bucket": "100ms"},
          "variants": [{"name": "balanced", "patch": {}},
                       {"name": "sticky", "patch": {"server": {"sticky": true}}}]}"#;
        let experiment = crate::scenario::load_str(text, "pool", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let figures =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1).unwrap();
        let figure = figures.iter().find(|f| f.stem == "replica-load").unwrap();
        let png = image::load_from_memory(&figure.image).unwrap();
        assert!(png.height() >= 2 * 2 * 170, "a row per variant");
        let mut reader = csv::Reader::from_reader(figure.csv.as_slice());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(
            header,
            [
                "variant",
                "service",
                "replica",
                "bucket_start_s",
                "bucket_s",
                "attempts_per_s",
                "held",
                "trigger"
            ]
        );
        let mut sums = std::collections::BTreeMap::<(String, String), f64>::new();
        for r in reader.records().map(Result::unwrap) {
            assert_eq!(&r[1], "server");
            let x: f64 = r[5].parse::<f64>().unwrap() * r[4].parse::<f64>().unwrap();
            *sums
                .entry((r[0].to_string(), r[2].to_string()))
                .or_default() += x;
        }
        assert_eq!(sums.len(), 2 * 3);
        for v in &result.points[0].variants {
            assert_eq!(v.replica_series.len(), 3);
            let mut all = 0.0;
            for (k, series) in v.replica_series.iter().enumerate() {
                let total: f64 = series
                    .rows
                    .iter()
                    .map(|r| r[Column::Attempts as usize])
                    .sum();
                let drawn = sums[&(v.name.clone(), k.to_string())];
                assert!(
                    (drawn - total).abs() <= 1e-9 * total.max(1.0),
                    "{} #{k}: {drawn} vs {total}",
                    v.name
                );
                // What was sent to a replica is what reached it: no hop, no run cut short.
                let received = v.metrics.replicas[k].attempts;
                assert!(
                    (total - received).abs() <= 1e-9 * received,
                    "{total} {received}"
                );
                all += total;
            }
            let sent = v.metrics.attempts;
            assert!((all - sent).abs() <= 1e-9 * sent, "{all} {sent}");
        }
    }

    #[test]
    fn a_run_without_replicas_gets_no_replica_figure_and_no_replica_series() {
        let text = r#"{"name": "s", "duration": "1s",
          "clients": {"count": 3, "workload": {"open": {"rate_per_s": 20}}},
          "server": {"concurrency": 1, "service_time": {"constant": "10ms"}}}"#;
        let experiment = crate::scenario::load_str(text, "s", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        assert!(result.points[0].variants[0].replica_series.is_empty());
        let figures =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1).unwrap();
        assert!(figures.iter().all(|f| f.stem != "replica-load"));
    }

    #[test]
    fn the_ramp_runs_from_its_first_colour_to_its_last() {
        assert_eq!(super::replica_color(0, 16), super::RAMP[0]);
        assert_eq!(super::replica_color(15, 16), super::RAMP[2]);
        assert_eq!(super::replica_color(0, 1), super::RAMP[0]);
    }
}
