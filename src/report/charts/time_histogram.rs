//! A time-series column over time as a rate, one panel per variant on one time axis and one
//! y scale: the retry-storm picture (retries pile up on a few instants without jitter and
//! spread with it), or when attempts reached the server. Trigger windows are shaded and a
//! variant whose replications split carries the same note as in the load-over-time figure.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{Area, Drawn};
use super::over_time::{self, PanelSpec, Series};
use super::style::variant_color;
use super::{Chart, Run, triggers};
use crate::metrics::Column;

/// A time histogram figure: one column over time.
pub struct TimeHistogram {
    stem: &'static str,
    column: Column,
    /// Whether only a run with some of the column gets the figure.
    only_if_any: bool,
}

/// When the clients' retries (and hedges, which the series counts with them) were sent;
/// only runs that sent any get it.
pub const RETRIES: TimeHistogram = TimeHistogram {
    stem: "retries-over-time",
    column: Column::Retries,
    only_if_any: true,
};

/// When attempts reached the entry service.
pub const ATTEMPTS: TimeHistogram = TimeHistogram {
    stem: "attempts-over-time",
    column: Column::Attempts,
    only_if_any: false,
};

/// What a time histogram says it counts: the title's words, the y axis and the caption.
#[derive(Debug, Clone, PartialEq)]
pub struct Words {
    /// What is counted, as the title says it before "per second".
    pub title: String,
    /// The y axis' title.
    pub y_desc: String,
    /// The caption.
    pub caption: String,
}

impl TimeHistogram {
    /// The words for `run`: exactly what its column counts there. The series counts the
    /// clients' attempts to the entry service only, and counts a hedge with the retries (it
    /// does not keep them apart), so a run with hedging says "hedges" and a run with calls
    /// names its entry service.
    pub fn words(&self, run: &Run) -> Words {
        let scenarios = || run.experiment.scenarios();
        let entry = run
            .ran()
            .first()
            .and_then(|v| v.scenario.services.first())
            .map_or("the server", |s| s.name.as_str());
        let graph = run.has_calls();
        match self.column {
            Column::Retries => {
                let retries = scenarios().any(|s| s.policy.retry.max_attempts != Some(1));
                let hedges = scenarios().any(|s| s.policy.hedge.is_some());
                let what = match (retries, hedges) {
                    (false, true) => "hedges",
                    (true, true) => "retries and hedges",
                    _ => "retries",
                };
                let mut caption = match (retries, hedges) {
                    (false, true) => "When hedges were sent (no variant retries: every attempt beyond a request's first is a hedge).".to_string(),
                    (true, true) => "When retries and hedges were sent, counted together: the time series does not keep them apart (summary.json has each variant's totals of each).".to_string(),
                    _ => "When retries were sent: without jitter they pile up on a few instants; with jitter they spread.".to_string(),
                };
                let title = if graph {
                    caption.push_str(&format!(
                        " Only the clients' {what} to the entry service, {entry}: retries between services are not counted here (service-load-over-time shows the attempts each service received)."
                    ));
                    format!("the clients' {what} to {entry}")
                } else {
                    format!("{what} sent")
                };
                Words {
                    title,
                    y_desc: format!("{what} (/s)"),
                    caption,
                }
            }
            _ => {
                let caption = if graph {
                    format!(
                        "When attempts reached the entry service, {entry}; the services behind it are in service-load-over-time."
                    )
                } else {
                    "When attempts reached the server (for the occ server, when writes happened)."
                        .to_string()
                };
                let at = if graph { entry } else { "the server" };
                Words {
                    title: format!("attempts at {at}"),
                    y_desc: "attempts (/s)".to_string(),
                    caption,
                }
            }
        }
    }
}

impl Chart for TimeHistogram {
    type Table = Series;

    fn stem(&self) -> &'static str {
        self.stem
    }

    fn applies(&self, run: &Run) -> bool {
        let col = self.column as usize;
        !self.only_if_any
            || (run.result.points.iter().flat_map(|p| &p.variants))
                .any(|v| v.series.iter().any(|r| r[col] > 0.0))
    }

    fn caption(&self, run: &Run) -> String {
        self.words(run).caption
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(run.variants().len(), 150, 66)
    }

    fn table(&self, run: &Run) -> Result<Series> {
        Ok(Series::of_variants(run, &[self.column]))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Series, root: &Area<DB>) -> Result<()> {
        let words = self.words(run);
        let (label, col) = (words.title.as_str(), self.column as usize);
        let variants = &run.point().variants;
        let frame = &table.frame;
        let title = format!(
            "{}: {label} per second{} ({}{}",
            run.name(),
            run.at(),
            frame.bucket_words(),
            run.mean_of(),
        );
        let body = over_time::titled(root, title, table.trigger, 19)?;
        // One y scale for every panel.
        let top = frame.max(|r| r[col]).max(1e-9) * 1.1;
        let y_desc = words.y_desc;
        let areas = body.split_evenly((variants.len(), 1));
        for (line, (v, area)) in table.lines.iter().zip(variants.iter().zip(&areas)) {
            let j = line.variant;
            let color = variant_color(j);
            let title = over_time::panel_title(v);
            let spec = PanelSpec::new(&title, color, top, &y_desc, j + 1 == variants.len());
            let mut chart = over_time::panel(area, frame, &spec)?;
            chart
                .draw_series(triggers::bands(&line.windows, frame.x1, top))
                .drawn()?;
            let style = if v.is_truncated() {
                color.mix(0.45).filled()
            } else {
                color.filled()
            };
            let rows = &frame.rows[line.row];
            chart
                .draw_series(over_time::bars(frame, rows, |_| 0.0, |r| r[col], style))
                .drawn()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::graph_run;
    use crate::scenario::{LoadOptions, load_str};

    fn words_of(text: &str, figure: &TimeHistogram) -> Words {
        let experiment = load_str(text, "t", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        figure.words(&Run {
            experiment: &experiment,
            result: &result,
        })
    }

    const SERVER: &str = r#""duration": "2s",
      "clients": {"count": 3, "workload": {"open": {"rate_per_s": 20}}},
      "server": {"concurrency": 1, "service_time": {"constant": "10ms"}}"#;

    /// tail-at-scale has max_attempts 1 and hedging: its "retries" were all hedges.
    #[test]
    fn retries_over_time_says_hedges_where_only_hedges_are_sent() {
        let text = format!(
            r#"{{"name": "h", {SERVER}, "policy": {{"retry": {{"max_attempts": 1}}}},
              "variants": [{{"name": "none", "patch": {{}}}},
                {{"name": "hedged", "patch": {{"policy": {{"hedge": {{"delay": "5ms"}}}}}}}}]}}"#
        );
        let w = words_of(&text, &RETRIES);
        assert_eq!(w.title, "hedges sent");
        assert_eq!(w.y_desc, "hedges (/s)");
        assert!(
            w.caption
                .contains("every attempt beyond a request's first is a hedge")
        );
        let both = text.replace(r#""max_attempts": 1"#, r#""max_attempts": 3"#);
        let w = words_of(&both, &RETRIES);
        assert_eq!(w.title, "retries and hedges sent");
        assert!(w.caption.contains("counted together"));
        let plain = format!(r#"{{"name": "r", {SERVER}}}"#);
        assert_eq!(words_of(&plain, &RETRIES).title, "retries sent");
        assert_eq!(words_of(&plain, &ATTEMPTS).title, "attempts at the server");
    }

    /// In a call graph the series counts the clients' retries to the entry service only.
    #[test]
    fn over_time_figures_of_a_call_graph_name_the_entry_service() {
        let (experiment, result) = graph_run(&LoadOptions::default());
        let run = Run {
            experiment: &experiment,
            result: &result,
        };
        let w = RETRIES.words(&run);
        assert_eq!(w.title, "the clients' retries to frontend");
        assert!(
            w.caption
                .contains("Only the clients' retries to the entry service, frontend"),
            "{}",
            w.caption
        );
        let w = ATTEMPTS.words(&run);
        assert_eq!(w.title, "attempts at frontend");
        assert!(!w.caption.contains("the server"), "{}", w.caption);
        let figures =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1).unwrap();
        let captions: Vec<&str> = figures
            .iter()
            .filter(|f| f.stem.ends_with("-over-time"))
            .map(|f| f.caption.as_str())
            .collect();
        assert!(
            captions
                .iter()
                .any(|c| c.contains("entry service, frontend"))
        );
    }
}
