//! A time-series column over time as a rate, one panel per variant on one time axis and one
//! y scale (logarithmic where a few tall bars would flatten the rest): the retry-storm
//! picture (retries pile up on a few instants without jitter and spread with it), or when
//! attempts reached the server, drawn only where some variant can retry or hedge (else the
//! attempts are the requests of the load figure). Trigger windows are shaded and a variant
//! whose replications split carries the same note as in the load-over-time figure.

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{Area, Drawn};
use super::over_time::{self, PanelSpec, Series, YAxis};
use super::style::variant_color;
use super::{Chart, Run, triggers};
use crate::metrics::Column;
use crate::model::{Backoff, Jitter};
use crate::scenario::{Scenario, ServerKind};

/// A time histogram figure: one column over time.
pub struct TimeHistogram {
    stem: &'static str,
    column: Column,
}

/// When the clients' retries (and hedges, which the series counts with them) were sent;
/// only runs that sent any get it.
pub const RETRIES: TimeHistogram = TimeHistogram {
    stem: "retries-over-time",
    column: Column::Retries,
};

/// When attempts reached the entry service; only runs where some variant can retry or
/// hedge get it: without, the attempts are the requests the load figure draws.
pub const ATTEMPTS: TimeHistogram = TimeHistogram {
    stem: "attempts-over-time",
    column: Column::Attempts,
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
                let retries = scenarios()
                    .any(|s| s.client_policies().any(|p| p.retry.max_attempts != Some(1)));
                let hedges = scenarios().any(|s| s.client_policies().any(|p| p.hedge.is_some()));
                let what = match (retries, hedges) {
                    (false, true) => "hedges",
                    (true, true) => "retries and hedges",
                    _ => "retries",
                };
                let mut caption = match (retries, hedges) {
                    (false, true) => "When hedges were sent (no variant retries: every attempt beyond a request's first is a hedge).".to_string(),
                    (true, true) => "When retries and hedges were sent, counted together: the time series does not keep them apart (summary.json has each variant's totals of each).".to_string(),
                    _ => "When retries were sent.".to_string(),
                };
                // Only a run with variants that back off with jitter and without shows both.
                let jitter = |s: &Scenario| match s.policy.retry.backoff {
                    Backoff::Exponential { jitter, .. } => Some(jitter != Jitter::None),
                    Backoff::Envoy { .. } => Some(true),
                    Backoff::None => None,
                };
                let retrying = scenarios().filter(|s| s.policy.retry.max_attempts != Some(1));
                let jitters: Vec<bool> = retrying.filter_map(jitter).collect();
                if jitters.contains(&true) && jitters.contains(&false) {
                    caption.push_str(
                        " Without jitter they pile up on a few instants; with jitter they spread.",
                    );
                }
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
                } else if scenarios().any(|s| matches!(s.services[0].server.kind, ServerKind::Occ))
                {
                    "When attempts reached the server (for the occ server, when writes happened)."
                        .to_string()
                } else {
                    "When attempts reached the server.".to_string()
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

    /// The y axis every panel shares, over the column's rates.
    fn axis(&self, table: &Series) -> YAxis {
        let col = self.column as usize;
        YAxis::of(table.frame.rows.iter().flatten().map(|r| r[col]))
    }
}

impl Chart for TimeHistogram {
    type Table = Series;

    fn stem(&self) -> &'static str {
        self.stem
    }

    fn applies(&self, run: &Run) -> bool {
        let col = self.column as usize;
        let mut all = run.result.points.iter().flat_map(|p| &p.variants);
        match self.column {
            Column::Retries => all.any(|v| v.series.iter().any(|r| r[col] > 0.0)),
            // Without a variant that can retry or hedge, the attempts are the requests.
            _ => (run.experiment.scenarios()).any(|s| {
                s.client_policies()
                    .any(|p| p.retry.max_attempts != Some(1) || p.hedge.is_some())
            }),
        }
    }

    fn caption(&self, run: &Run) -> String {
        let mut caption = self.words(run).caption;
        caption.push_str(" Every panel has one time axis, which runs to the end of the last variant's activity; each panel stops where its own variant's activity stopped.");
        if self.table(run).is_ok_and(|t| self.axis(&t).log) {
            caption.push_str(" The rates are on a log axis: the tallest is more than 30 times the typical one, which a linear axis would flatten.");
        }
        caption
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
        // One y scale for every panel; a log one is said in the title, where there is room.
        let y = self.axis(table);
        let title = format!(
            "{}: {label} per second{} ({}{}{}",
            run.name(),
            run.at(),
            frame.bucket_words(),
            run.mean_of(),
            if y.log { "; log scale" } else { "" },
        );
        let body = over_time::titled(root, title, table.trigger, 19)?;
        let y_desc = words.y_desc;
        let areas = body.split_evenly((variants.len(), 1));
        for (line, (v, area)) in table.lines.iter().zip(variants.iter().zip(&areas)) {
            let j = line.variant;
            let color = variant_color(j);
            let rows = &frame.rows[line.row];
            let mut title = over_time::panel_title(v);
            // An empty panel says so rather than look like a drawing that failed.
            if rows.iter().all(|r| r[col] == 0.0) {
                title.push_str(&format!(": no {} at all", y_desc.trim_end_matches(" (/s)")));
            }
            let spec = PanelSpec::new(&title, color, y, &y_desc, j + 1 == variants.len());
            let mut chart = over_time::panel(area, frame, &spec)?;
            chart
                .draw_series(triggers::bands(&line.windows, frame.x1, (y.lo, y.hi)))
                .drawn()?;
            let style = if v.is_truncated() {
                color.mix(0.45).filled()
            } else {
                color.filled()
            };
            chart
                .draw_series(over_time::bars(
                    frame,
                    rows,
                    |_| y.lo,
                    |r| y.at(r[col]),
                    style,
                ))
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
