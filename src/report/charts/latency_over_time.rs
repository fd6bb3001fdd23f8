//! Latency over time: the p50 and p99 of the requests answered (successful, or degraded by a
//! fallback) in each time bucket, pooled over replications, a panel per variant on the time
//! axis of the other over-time figures and one y scale, with the trigger windows shaded; in a
//! call graph, a panel per service below them, each variant's p99 response time as a line.
//! It shows how long after a trigger p99 stays high, which the goodput of load-over-time does
//! not. Where a display bucket merges stored ones, it takes the highest of their percentiles.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn};
use super::over_time::{self, Frame, Line, PanelSpec, Row, YAxis};
use super::service_load::services;
use super::style::{INK, variant_color};
use super::sweep_curves::YScale;
use super::{Chart, Run, Table, triggers};
use crate::metrics::{BucketLatency, Column, VariantResult};
use crate::report::shape;

/// The latency-over-time figure.
pub struct LatencyOverTime;

/// What the figure draws: the shared time axis, and per line (a variant's requests, or a
/// service of a variant) its percentiles per display bucket.
pub struct Latencies {
    frame: Frame,
    lines: Vec<Line>,
    values: Vec<Vec<Option<BucketLatency>>>,
    trigger: bool,
}

/// Each line's percentiles per display bucket of `frame` (`series`: each line's stored ones
/// with their bucket width): the highest of the stored buckets a display bucket merges.
fn display(
    frame: &Frame,
    series: &[(&[Option<BucketLatency>], f64)],
) -> Vec<Vec<Option<BucketLatency>>> {
    series
        .iter()
        .zip(&frame.rows)
        .map(|((stored, width), rows)| {
            let merge = ((frame.bucket / width).round() as usize).max(1);
            (0..rows.len())
                .map(|i| {
                    let chunk = stored.iter().skip(i * merge).take(merge).flatten();
                    chunk.copied().reduce(|a, b| BucketLatency {
                        p50_ms: a.p50_ms.max(b.p50_ms),
                        p99_ms: a.p99_ms.max(b.p99_ms),
                    })
                })
                .collect()
        })
        .collect()
}

impl Latencies {
    /// The lines of `run`'s focus point: each variant's requests, then each service of a call
    /// graph (panel order), each variant that has it.
    fn of<'a>(run: &Run<'a>) -> Latencies {
        let (ran, variants) = (run.ran(), &run.point().variants);
        let windows = run.windows();
        let mut lines = Vec::new();
        let mut rows: Vec<(&'a [Row], f64)> = Vec::new();
        let mut stored: Vec<(&'a [Option<BucketLatency>], f64)> = Vec::new();
        let mut push = |key: [&str; 2], j, r, l: &'a [Option<BucketLatency>], w| {
            lines.push(Line {
                row: lines.len(),
                variant: j,
                key: key.map(str::to_string).to_vec(),
                windows: windows.get(j).cloned().unwrap_or_default(),
            });
            rows.push((r, w));
            stored.push((l, w));
        };
        for (j, v) in variants.iter().enumerate() {
            let w = v.bucket.as_secs_f64();
            push(["requests", &v.name], j, &v.series, &v.latency, w);
        }
        for (name, _) in services(ran) {
            for (j, (v, r)) in variants.iter().zip(ran).enumerate() {
                let i = r.scenario.services.iter().position(|x| x.name == name);
                let shown = i.and_then(|i| v.service_series.get(i));
                if let Some(s) = shown.filter(|_| shape::has_calls(&r.scenario)) {
                    let w = s.bucket.as_secs_f64();
                    push([&name, &v.name], j, &s.rows, &s.latency, w);
                }
            }
        }
        let frame = Frame::new(&rows);
        let values = display(&frame, &stored);
        Latencies {
            frame,
            lines,
            values,
            trigger: windows.iter().any(|w| !w.is_empty()),
        }
    }

    /// Whether the lines of `v` (its requests, `latency_of` "requests") or of service `name`
    /// are drawn, with their values.
    fn line(&self, of: &str, j: usize) -> Option<(&Line, &[Option<BucketLatency>])> {
        let i = self
            .lines
            .iter()
            .position(|l| l.key[0] == of && l.variant == j)?;
        Some((&self.lines[i], &self.values[i]))
    }
}

impl Table for Latencies {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        let mut head = vec!["latency_of", "variant", "bucket_start_s", "bucket_s"];
        head.extend(["p50_ms", "p99_ms"]);
        if self.trigger {
            head.push("trigger");
        }
        w.write_record(&head)?;
        let bucket = self.frame.bucket;
        for (line, values) in self.lines.iter().zip(&self.values) {
            for (i, value) in values.iter().enumerate() {
                let start = self.frame.start(i);
                let mut record = line.key.clone();
                record.extend([start.to_string(), bucket.to_string()]);
                record.extend(match value {
                    Some(l) => [l.p50_ms.to_string(), l.p99_ms.to_string()],
                    None => [String::new(), String::new()],
                });
                if self.trigger {
                    let inside = triggers::overlaps(&line.windows, start, start + bucket);
                    record.push(u8::from(inside).to_string());
                }
                w.write_record(&record)?;
            }
        }
        Ok(())
    }
}

/// The y axis every panel shares, by the sweep curves' rule ([`YScale`]): logarithmic where
/// the percentiles drawn span more than 1.5 decades, else linear from 0.
fn axis(table: &Latencies) -> YAxis {
    let drawn = table
        .lines
        .iter()
        .zip(&table.values)
        .flat_map(|(line, values)| {
            let requests = line.key[0] == "requests";
            values
                .iter()
                .flatten()
                .flat_map(move |l| [requests.then_some(l.p50_ms), Some(l.p99_ms)])
        });
    let y = YScale::of(&vec![drawn.flatten().map(|ms| Some((ms, 0.0))).collect()]);
    YAxis {
        log: y.log,
        lo: y.lo,
        hi: y.hi,
    }
}

/// Draws `values` as a line (broken where a bucket had no answer) of `pick` of each, dashed
/// as the variant at `dash` is (solid for 0); a bucket with no answered neighbour is drawn
/// as a level one bucket wide.
fn draw_line<DB: DrawingBackend>(
    chart: &mut over_time::Panel<'_, DB>,
    frame: &Frame,
    values: &[Option<BucketLatency>],
    (axis, pick): (YAxis, fn(&BucketLatency) -> f64),
    (dash, color, width): (usize, RGBColor, u32),
) -> Result<()> {
    let points: Vec<Option<(f64, f64)>> = values
        .iter()
        .enumerate()
        .map(|(i, l)| l.map(|l| (frame.start(i) + frame.bucket / 2.0, axis.at(pick(&l)))))
        .collect();
    for run in strokes(&points, frame.bucket) {
        let line = canvas::variant_line(run, dash, color, width);
        chart.draw_series(std::iter::once(line)).drawn()?;
    }
    Ok(())
}

/// The strokes of a line through `points` (bucket middles, `None` where nothing was
/// answered), broken at the gaps; a bucket alone between gaps is a level across its width
/// `bucket`, not a point too small to see.
fn strokes(points: &[Option<(f64, f64)>], bucket: f64) -> Vec<Vec<(f64, f64)>> {
    let runs = points.split(Option::is_none).filter(|r| !r.is_empty());
    runs.map(|run| match run {
        [Some((x, y))] => vec![(x - bucket / 2.0, *y), (x + bucket / 2.0, *y)],
        _ => run.iter().flatten().copied().collect(),
    })
    .collect()
}

impl Chart for LatencyOverTime {
    type Table = Latencies;

    fn stem(&self) -> &'static str {
        "latency-over-time"
    }

    fn applies(&self, run: &Run) -> bool {
        run.point()
            .variants
            .iter()
            .any(|v| v.latency.iter().any(Option::is_some))
    }

    fn caption(&self, run: &Run) -> String {
        let table = Latencies::of(run);
        let pooled = pooled(run);
        let services = if table.lines.iter().any(|l| l.key[0] != "requests") {
            " Below them, each service of the call graph: the p99 of the time from an attempt's arrival to the service's answer, over the attempts it answered (successful or degraded) while their caller still waited, a line per variant."
        } else {
            ""
        };
        let merged = run
            .point()
            .variants
            .iter()
            .any(|v| v.bucket.as_secs_f64() < table.frame.bucket * 0.999);
        format!(
            "The p50 (thin) and p99 (thick) latency of the requests {}, from each request's start, over those that ended in each of the {}{pooled}{}. Each percentile is read within latency bins 12 % wide; failed requests are not counted; a gap is a bucket in which nothing was answered.{services}{}",
            if run.can_degrade() {
                "answered (successful, or degraded by a fallback)"
            } else {
                "that succeeded"
            },
            table.frame.bucket_words(),
            if table.trigger {
                ": how long after the trigger p99 stays high"
            } else {
                ""
            },
            if merged {
                " Each point is the highest of the stored buckets it spans."
            } else {
                ""
            }
        )
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        let panels =
            run.variants().len() + services(run.ran()).len() * usize::from(run.has_calls());
        super::rows_size(panels, 150, if run.has_calls() { 110 } else { 66 })
    }

    fn table(&self, run: &Run) -> Result<Latencies> {
        Ok(Latencies::of(run))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        run: &Run,
        table: &Latencies,
        root: &Area<DB>,
    ) -> Result<()> {
        let frame = &table.frame;
        let variants = &run.point().variants;
        let scale = axis(table);
        let log = if scale.log { ", log scale" } else { "" };
        let pooled = pooled(run);
        let title = format!(
            "{}: latency of answered requests{} ({}{pooled}; thick: p99, thin: p50",
            run.name(),
            run.at(),
            frame.bucket_words(),
        );
        let mut body = over_time::titled(root, title, table.trigger, 17)?;
        let services: Vec<(String, bool)> = services(run.ran())
            .into_iter()
            .filter(|(s, _)| table.lines.iter().any(|l| l.key[0] == *s))
            .collect();
        if !services.is_empty() {
            body = canvas::legend(&body, &canvas::variant_keys(variants, true))?;
        }
        let areas = body.split_evenly((variants.len() + services.len(), 1));
        let y_desc = format!("ms{log}");
        for (j, (v, area)) in variants.iter().zip(&areas).enumerate() {
            let line = table.line("requests", j);
            // A stretch without an answer is named in the title, clear of the lines.
            let silent = note(frame, line);
            let title = over_time::panel_title_as(v, "percentiles pooled over");
            let title = match silent {
                Some(words) => format!("{title}: {words}"),
                None => title,
            };
            let spec = PanelSpec::new(
                &title,
                variant_color(j),
                scale,
                &y_desc,
                j + 1 == areas.len(),
            );
            let mut chart = over_time::panel(area, frame, &spec)?;
            panel_body(&mut chart, frame, line, scale, (j, v))?;
        }
        for (s, ((name, entry), area)) in services.iter().zip(&areas[variants.len()..]).enumerate()
        {
            let title = format!(
                "{name}{}: p99 response time",
                if *entry { " (entry)" } else { "" }
            );
            let spec = PanelSpec::new(&title, INK, scale, &y_desc, s + 1 == services.len());
            let mut chart = over_time::panel(area, frame, &spec)?;
            let mut bands: Vec<(f64, f64)> = run.windows().into_iter().flatten().collect();
            bands.dedup();
            chart
                .draw_series(triggers::bands(&bands, frame.x1, (scale.lo, scale.hi)))
                .drawn()?;
            for (j, v) in variants.iter().enumerate() {
                if let Some((_, values)) = table.line(name, j) {
                    let width = if v.is_truncated() { 1 } else { 2 };
                    draw_line(
                        &mut chart,
                        frame,
                        values,
                        (scale, |l| l.p99_ms),
                        (j, variant_color(j), width),
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// ", pooled over N replications" with more than one, else nothing.
fn pooled(run: &Run) -> String {
    match run.experiment.replications {
        1 => String::new(),
        n => format!(", pooled over {n} replications"),
    }
}

/// A variant's panel: its trigger bands, then its p50 (thin, pale) and p99 (thick) lines.
fn panel_body<DB: DrawingBackend>(
    chart: &mut over_time::Panel<'_, DB>,
    frame: &Frame,
    line: Option<(&Line, &[Option<BucketLatency>])>,
    scale: YAxis,
    (j, v): (usize, &VariantResult),
) -> Result<()> {
    let Some((line, values)) = line else {
        return Ok(());
    };
    chart
        .draw_series(triggers::bands(
            &line.windows,
            frame.x1,
            (scale.lo, scale.hi),
        ))
        .drawn()?;
    let color = variant_color(j);
    let paler = |c: u8| c + ((255 - c) as f64 * 0.4) as u8;
    let pale = RGBColor(paler(color.0), paler(color.1), paler(color.2));
    // One variant a panel: solid lines, told apart by their width.
    draw_line(chart, frame, values, (scale, |l| l.p50_ms), (0, pale, 1))?;
    let width = if v.is_truncated() { 1 } else { 3 };
    draw_line(
        chart,
        frame,
        values,
        (scale, |l| l.p99_ms),
        (0, color, width),
    )
}

/// The fewest buckets without an answer a panel title names: a gap of one or two is plain
/// to see, a longer one (first-storm's 0.8 s while the server refused) is said, however short
/// beside the time axis.
const SILENCE_BUCKETS: usize = 3;

/// How many answers must have been due in a gap (at the mean rate requests started) for the
/// panel title to name it.
const SILENCE_DUE: f64 = 20.0;

/// What a variant's panel title says of its silence: "nothing answered" for a variant that
/// answered nothing at all (amplification-closed-form's f = 1 variants), not an empty panel;
/// else its longest stretch without an answer, if long ([`silence`]).
fn note(frame: &Frame, line: Option<(&Line, &[Option<BucketLatency>])>) -> Option<String> {
    match line {
        Some((l, values)) if values.iter().any(Option::is_some) => {
            silence(frame, &frame.rows[l.row], values)
        }
        _ => Some("nothing answered".to_string()),
    }
}

/// The longest stretch in which a variant answered nothing while its clients still started
/// requests (`rows`), when it spans [`SILENCE_BUCKETS`] buckets or more and [`SILENCE_DUE`]
/// answers were due in it: "nothing answered from
/// a to b" (or "after a", when no answer came again).
fn silence(frame: &Frame, rows: &[Row], values: &[Option<BucketLatency>]) -> Option<String> {
    let busy = rows
        .iter()
        .rposition(|r| r[Column::Started as usize] > 0.0)?
        + 1;
    let first = values.iter().position(Option::is_some)?;
    let answered = |i: usize| values.get(i).is_some_and(Option::is_some);
    let (mut best, mut i) = ((0, 0), first);
    while i < busy {
        let a = i;
        while i < busy && !answered(i) {
            i += 1;
        }
        if i - a > best.1 - best.0 {
            best = (a, i);
        }
        i += 1;
    }
    let (a, b) = best;
    // A gap in a trickle of requests is chance: only one where some tens of answers were
    // due (at the rate requests started) is named.
    let started = rows[..busy].iter().map(|r| r[Column::Started as usize]);
    let rate = started.sum::<f64>() / busy as f64;
    let due = rate * (b - a) as f64 * frame.bucket;
    if b - a < SILENCE_BUCKETS || due < SILENCE_DUE {
        return None;
    }
    let at = |i: usize| format!("{} {}", frame.unit.label(&frame.start(i)), frame.unit.name);
    let words = if (b..values.len()).all(|i| !answered(i)) {
        format!("nothing answered after {}", at(a))
    } else {
        format!("nothing answered from {} to {}", at(a), at(b))
    };
    Some(words)
}

#[cfg(test)]
mod tests {
    use crate::report::fixture::{SERVICES, graph_run};
    use crate::scenario::LoadOptions;

    /// The figure's CSV is the table it drew: per variant its requests' p50 and p99 per
    /// bucket as the variant's series has them (empty where nothing was answered), then per
    /// service and variant the service's; a panel for each.
    #[test]
    fn the_latency_csv_is_each_series_percentiles() {
        let (experiment, result) = graph_run(&LoadOptions::default());
        let figures =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1).unwrap();
        let figure = figures
            .iter()
            .find(|f| f.stem == "latency-over-time")
            .unwrap();
        assert!(
            figure
                .caption
                .contains("how long after the trigger p99 stays high")
        );
        assert!(
            figure.caption.contains("pooled over 3 replications"),
            "{}",
            figure.caption
        );
        let variants = &result.points[0].variants;
        let png = image::load_from_memory(&figure.image).unwrap();
        assert!(png.height() >= 150 * (variants.len() + SERVICES.len()) as u32);
        let mut reader = csv::Reader::from_reader(figure.csv.as_slice());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        let expected = [
            "latency_of",
            "variant",
            "bucket_start_s",
            "bucket_s",
            "p50_ms",
            "p99_ms",
            "trigger",
        ];
        assert_eq!(header, expected);
        let mut rows = std::collections::BTreeMap::<(String, String), Vec<[String; 2]>>::new();
        for r in reader.records().map(Result::unwrap) {
            assert_eq!(&r[3], "1", "the stored 1 s buckets");
            rows.entry((r[0].to_string(), r[1].to_string()))
                .or_default()
                .push([r[4].to_string(), r[5].to_string()]);
        }
        assert_eq!(rows.len(), variants.len() * (1 + SERVICES.len()));
        let cells = |l: &Option<crate::metrics::BucketLatency>| match l {
            Some(l) => [l.p50_ms.to_string(), l.p99_ms.to_string()],
            None => [String::new(), String::new()],
        };
        for v in variants {
            let drawn = &rows[&("requests".to_string(), v.name.clone())];
            assert!(!drawn.is_empty());
            for (d, l) in drawn.iter().zip(&v.latency) {
                assert_eq!(*d, cells(l), "{}", v.name);
            }
            for (name, s) in SERVICES.iter().zip(&v.service_series) {
                let drawn = &rows[&(name.to_string(), v.name.clone())];
                for (d, l) in drawn.iter().zip(&s.latency) {
                    assert_eq!(*d, cells(l), "{name} {}", v.name);
                }
            }
        }
        // The stall from 10 s to 15 s leaves buckets without an answer: empty cells.
        assert!(
            rows.values()
                .flatten()
                .any(|[p50, p99]| p50.is_empty() && p99.is_empty())
        );
    }

    /// A split variant's panel draws percentiles of both groups' answers pooled, not a mean:
    /// its title says so, where the load figures say "mean of".
    #[test]
    fn a_split_variant_panel_says_its_percentiles_are_pooled() {
        let (_, mut result) = graph_run(&LoadOptions::default());
        let v = &mut result.points[0].variants[0];
        v.metrics.recovery = Some(crate::metrics::RecoveryMetrics {
            recovered: 1.0,
            replications: 3.0,
            ..Default::default()
        });
        let title = super::over_time::panel_title_as(v, "percentiles pooled over");
        assert!(
            title.ends_with("(percentiles pooled over 1 recovered and 2 collapsed replications: no single run looks like this)"),
            "{title}"
        );
        assert!(super::over_time::panel_title(v).contains("(mean of 1 recovered"));
    }

    /// tail-at-scale has no trigger: its caption says nothing of one.
    #[test]
    fn a_run_without_a_trigger_has_no_trigger_in_its_caption() {
        use super::super::{Chart, Run};
        let text = r#"{"name": "calm", "duration": "2s", "replications": 2,
            "clients": {"count": 2, "workload": {"open": {"rate_per_s": 50}}},
            "server": {"service_time": {"constant": "1ms"}}}"#;
        let experiment = crate::scenario::load_str(text, "calm", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        let caption = super::LatencyOverTime.caption(&run);
        assert!(!caption.contains("trigger"), "{caption}");
        assert!(
            caption.contains("of the requests that succeeded"),
            "{caption}"
        );
        assert!(caption.contains("pooled over 2 replications"), "{caption}");
    }

    /// tiers-retry-amplification's answers at 23 s and 31 s, each alone between gaps,
    /// were not drawn at all: a line needs two points.
    #[test]
    fn a_bucket_alone_between_gaps_is_drawn_as_a_level() {
        let points = [
            Some((0.5, 1.0)),
            Some((1.5, 2.0)),
            None,
            Some((3.5, 7.0)),
            None,
        ];
        let strokes = super::strokes(&points, 1.0);
        assert_eq!(strokes.len(), 2);
        assert_eq!(strokes[0], [(0.5, 1.0), (1.5, 2.0)]);
        assert_eq!(strokes[1], [(3.0, 7.0), (4.0, 7.0)], "one bucket wide");
    }

    /// A variant that never answered says "nothing answered" in its title; one that did,
    /// without a silence, says nothing.
    #[test]
    fn a_variant_that_answered_nothing_says_so() {
        use super::super::Run;
        let text = r#"{"name": "f", "duration": "2s",
            "clients": {"count": 2, "workload": {"open": {"rate_per_s": 50}}},
            "server": {"service_time": {"constant": "1ms"}},
            "variants": [{"name": "fine", "patch": {}},
                         {"name": "broken", "patch": {"server": {"error_rate": 1}}}]}"#;
        let experiment = crate::scenario::load_str(text, "f", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        let table = super::Latencies::of(&run);
        let note = |j| super::note(&table.frame, table.line("requests", j));
        assert_eq!(note(0), None);
        assert_eq!(note(1).as_deref(), Some("nothing answered"));
    }
}
