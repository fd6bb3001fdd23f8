//! `report.md`: a page a team can paste into a design review. What the scenario models in
//! words, the results with their 95 % intervals, findings written as sentences computed from
//! the numbers, and every figure with a caption saying what to look at.
//!
//! This file is the page: which sections it has, in which order, and the escaping of text
//! into Markdown. Each section is rendered in its own file.

mod compare;
mod findings;
mod recovery;
mod results;
mod sweep;

use std::fmt::Write as _;

pub use findings::{findings, truncation_notes};

use super::{shape, value_text};
use crate::metrics::{ExperimentResult, VariantResult};
use crate::report::shape::spread_split;
pub(super) use crate::scenario::phrase::{capitalized, escape};
use crate::scenario::words::describe;
use crate::scenario::{Experiment, Scenario, Sweep, Variant};
use compare::{SPLIT, rule};
use findings::{findings_at, findings_below_entry};
use recovery::recovery_section;
use results::{
    group_tables, replica_tables, results_table, service_and_call_tables, theory_section,
};
use sweep::{every_pair, sweep_findings};

/// A figure as the report shows it.
pub struct FigureRef {
    /// File name inside the output folder.
    pub file: String,
    /// What to look at.
    pub caption: String,
}

/// Renders report.md.
pub fn report_md(
    experiment: &Experiment,
    result: &ExperimentResult,
    figures: &[FigureRef],
) -> String {
    let page = Page::new(experiment, result);
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", escape(&experiment.name));
    if let Some(d) = &experiment.description {
        let _ = writeln!(out, "{d}\n");
    }
    what_this_models(&mut out, &page);
    results_section(&mut out, &page);
    findings_section(&mut out, &page);
    recovery_section(&mut out, &page.scenarios, page.variants(), &page.server);
    every_pair(&mut out, experiment, result);
    if !figures.is_empty() {
        let _ = writeln!(out, "\n## Figures\n");
        for f in figures {
            let caption = escape(&f.caption);
            let _ = writeln!(out, "![{caption}]({})\n\n*{caption}*\n", f.file);
        }
    }
    let _ = writeln!(
        out,
        "---\nMade by retrystorm {} from `summary.json` in this folder; every figure has its data beside it as CSV.",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// What the sections of the page share: the run, and the point of it that the results and
/// findings are at (with a sweep, its focus value; else the only point).
struct Page<'a> {
    experiment: &'a Experiment,
    result: &'a ExperimentResult,
    /// The index of the point the results are at.
    focus: usize,
    /// The scenario each variant ran at that point.
    scenarios: Vec<&'a Scenario>,
    /// Whether some variant has calls below the entry ([`shape::has_calls`]): then the
    /// top-level numbers describe the clients and the entry service, and every service and
    /// call has its own table.
    calls: bool,
    /// Whether a request of some variant can be answered degraded ([`shape::can_degrade`]):
    /// then a fallback's answer is neither a success nor a failure, and latency is that of
    /// answered requests.
    degraded: bool,
    /// What the top-level numbers describe: "the server", or the entry in bold when there are
    /// calls below it.
    server: String,
}

impl<'a> Page<'a> {
    fn new(experiment: &'a Experiment, result: &'a ExperimentResult) -> Self {
        let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
        let scenarios: Vec<&Scenario> = experiment.points[focus]
            .variants
            .iter()
            .map(|v| &v.scenario)
            .collect();
        let calls = shape::any_has_calls(scenarios.iter().copied());
        let degraded = shape::any_can_degrade(scenarios.iter().copied());
        let server = match scenarios.first() {
            Some(s) if calls => format!("**{}**", escape(&s.services[0].name)),
            _ => "the server".to_string(),
        };
        Page {
            experiment,
            result,
            focus,
            scenarios,
            calls,
            degraded,
            server,
        }
    }

    /// The results of the variants at the point.
    fn variants(&self) -> &'a [VariantResult] {
        &self.result.points[self.focus].variants
    }

    /// The variants as they ran at the point.
    fn ran(&self) -> &'a [Variant] {
        &self.experiment.points[self.focus].variants
    }

    /// With a sweep, where the table and the findings are: " at label = value" (and the second
    /// setting's); empty without one.
    fn at_point(&self) -> String {
        let (Some(s), Some(x)) = (
            &self.experiment.sweep,
            &self.result.points[self.focus].value,
        ) else {
            return String::new();
        };
        let mut at = format!(
            " at {} = {}",
            escape(&s.label),
            escape(&value_text(Some(x)))
        );
        if let (Some(second), Some(y)) =
            (&s.second, &self.experiment.points[self.focus].second_value)
        {
            let _ = write!(
                at,
                ", {} = {}",
                escape(&second.label),
                escape(&value_text(Some(y)))
            );
        }
        at
    }
}

/// "What this models": the first variant's scenario in words, the replications and the
/// sweep, then each variant by what sets it apart from the first.
fn what_this_models(out: &mut String, page: &Page) {
    let experiment = page.experiment;
    let _ = writeln!(out, "## What this models\n");
    let base = describe(page.scenarios[0]);
    for line in &base {
        let _ = writeln!(out, "- {line}");
    }
    let reps = experiment.replications;
    let _ = writeln!(
        out,
        "- Each variant runs {reps} replication{} with seed {}; variants share their random numbers, so they meet the same traffic.",
        if reps == 1 { "" } else { "s" },
        experiment.seed
    );
    if let Some(s) = &experiment.sweep {
        let _ = writeln!(out, "{}", sweep_line(page, s));
    }
    let _ = writeln!(out, "\nThe variants:\n");
    for (v, sc) in page.variants().iter().zip(&page.scenarios) {
        let lines = describe(sc);
        let differs: Vec<String> = lines
            .iter()
            .filter(|l| !base.contains(l))
            .cloned()
            .collect();
        let dropped: Vec<&str> = base
            .iter()
            .filter(|l| !lines.contains(l))
            .map(String::as_str)
            .collect();
        if differs.is_empty() && dropped.is_empty() {
            let _ = writeln!(out, "- **{}**: as above.", escape(&v.name));
        } else if differs.is_empty() {
            // A variant that only takes a setting away is not "as above".
            let _ = writeln!(
                out,
                "- **{}**: as above, without this: {}",
                escape(&v.name),
                dropped.join(" ")
            );
        } else {
            let _ = writeln!(out, "- **{}**: {}", escape(&v.name), differs.join(" "));
        }
    }
}

/// The sweep in one line: the swept settings, their values and where the results are.
fn sweep_line(page: &Page, s: &Sweep) -> String {
    let list = |values: &[serde_json::Value]| -> String {
        let texts: Vec<String> = values.iter().map(|v| escape(&v.to_string())).collect();
        texts.join(", ")
    };
    let value = page.result.points[page.focus]
        .value
        .as_ref()
        .map_or(String::new(), |v| escape(&v.to_string()));
    match (&s.second, &page.experiment.points[page.focus].second_value) {
        (Some(second), Some(y)) => format!(
            "- Every variant runs at every pair of a value of {} ({}) and a value of {} ({}): {} points. Results below are at {} = {value}, {} = {}.",
            code(&s.path),
            list(&s.values),
            code(&second.path),
            list(&second.values),
            page.experiment.points.len(),
            code(&s.path),
            code(&second.path),
            escape(&y.to_string()),
        ),
        _ => format!(
            "- Every variant runs at every value of {}: {}. Results below are at {} = {value}.",
            code(&s.path),
            list(&s.values),
            code(&s.path),
        ),
    }
}

/// "Results": what the columns mean, the table, a note for each variant whose replications
/// split, the tables per service and per call where there are calls below the entry, and
/// theory beside simulation.
fn results_section(out: &mut String, page: &Page) {
    let reps = page.experiment.replications;
    let _ = writeln!(out, "\n## Results{}\n", page.at_point());
    if reps > 1 {
        let _ = writeln!(
            out,
            "Means over {reps} replications, ± the 95 % confidence half-width.\n"
        );
    }
    let mut columns = Vec::new();
    if page.calls {
        columns.push(format!(
            "The columns describe the clients and the entry service, {}: work and amplification count the attempts that reached it; every service and call has its own table below.",
            page.server
        ));
    }
    if page.degraded {
        columns.push("A request that a fallback answered is degraded, neither a success nor a failure: its share stands between the two.".to_string());
    }
    if !columns.is_empty() {
        let _ = writeln!(out, "{}\n", columns.join(" "));
    }
    if page.degraded {
        let _ = writeln!(
            out,
            "Latency is the latency of answered requests (successes and fallback answers alike), from the request's start to its answer; the share that failed is beside it (failed requests' time to give up is in summary.json as `failure_latency_ms`). Percentiles pool the requests of every replication.\n"
        );
    } else {
        let _ = writeln!(
            out,
            "Latency is the latency of successful requests, from the request's start to its success; the share that failed is beside it (failed requests' time to give up is in summary.json as `failure_latency_ms`). Percentiles pool the requests of every replication.\n"
        );
    }
    let variants = page.variants();
    let start = out.len();
    results_table(out, variants, &page.scenarios, reps > 1);
    for v in variants {
        if let Some(r) = v
            .metrics
            .recovery
            .filter(|r| r.recovered > 0.0 && r.recovered < r.replications)
        {
            let _ = writeln!(
                out,
                "\n**{}**: {:.0} of {:.0} replications recovered and {:.0} stayed collapsed, so its means describe no single run (see Recovery and the typical runs in the figures).",
                escape(&v.name),
                r.recovered,
                r.replications,
                r.replications - r.recovered
            );
        } else if spread_split(v, reps) {
            let name = escape(&v.name);
            let _ = writeln!(
                out,
                "\n**{name}**: its replications split into different behaviours: {SPLIT}. Its means describe no single run."
            );
        }
    }
    if page.calls {
        service_and_call_tables(out, page.ran(), variants, reps > 1);
    }
    replica_tables(out, page.ran(), variants, reps > 1);
    group_tables(out, page.ran(), variants, reps > 1);
    if crate::report::table::has_cut(&out[start..]) {
        let _ = writeln!(
            out,
            "\nA cell such as 19551 [0, 46981] is a mean whose 95 % interval would cross 0 or 100 %, which the value cannot: the interval is printed cut there."
        );
    }
    theory_section(out, &page.scenarios, variants);
}

/// "Findings": a caveat per truncated variant, the findings at the point, and along a sweep
/// how the numbers move.
fn findings_section(out: &mut String, page: &Page) {
    let variants = page.variants();
    for note in truncation_notes(variants) {
        let _ = writeln!(out, "\n> {note}");
    }
    let _ = writeln!(out, "\n## Findings{}\n", page.at_point());
    let _ = writeln!(out, "{}\n", rule(page.experiment.replications));
    let found = findings_at(variants, &page.server);
    for f in found
        .iter()
        .chain(&findings_below_entry(page.ran(), variants))
    {
        let _ = writeln!(out, "- {f}");
    }
    let along = sweep_findings(page.experiment, page.result);
    if !along.is_empty() {
        let _ = writeln!(out, "\n### Along the sweep\n");
        for f in along {
            let _ = writeln!(out, "- {f}");
        }
    }
}

/// A setting's path as inline code; one holding a backtick or a line break (which would end
/// the code span) is written as escaped text instead.
pub(super) fn code(text: &str) -> String {
    if text.contains('`') || text.chars().any(char::is_control) {
        escape(text)
    } else {
        format!("`{text}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::graph_run;
    use crate::scenario::LoadOptions;

    #[test]
    fn a_call_graph_report_describes_the_graph_and_tables_each_service_and_call() {
        let (experiment, result) = graph_run(&LoadOptions::default());
        let md = report_md(&experiment, &result, &[]);
        println!("{md}");
        assert!(md.contains("- Call graph: the clients send their requests to **frontend**, the entry service; **frontend** calls **backend** on every attempt and **cache** for 50 % of requests"));
        assert!(md.contains("- Service **db**: 4 workers"));
        assert!(md.contains("- Fault at **frontend** (entry) from 10s to 15s"));
        assert!(!md.contains("- Fault at **db**"));
        assert!(md.contains(
            "- Calls from **backend** to **db**: attempts time out after 500ms; no retries."
        ));
        assert!(md.contains("- Clients to **frontend**: attempts time out after 500ms."));
        // The results table: degraded between success and failure, latency of answers.
        let header = md.lines().find(|l| l.starts_with("| variant |")).unwrap();
        assert!(
            header.contains("| success (%) | degraded (%) | failed (%) |"),
            "{header}"
        );
        assert!(header.contains("p99 latency of answers (ms)"));
        let rows: Vec<&str> = md
            .lines()
            .skip_while(|l| !l.starts_with("| variant |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(rows.len(), 3);
        for row in &rows {
            assert_eq!(
                row.matches(" |").count(),
                header.matches(" |").count(),
                "{row}"
            );
        }
        assert!(md.contains("\n### Per service\n") && md.contains("\n### Per call\n"));
        assert!(md.contains("| frontend (entry) |") && md.contains("| backend → db |"));
        // The fixture's db sees the entry's amplification times its variant's factor twice.
        let db = |name: &str| {
            let v = result.points[0]
                .variants
                .iter()
                .find(|v| v.name == name)
                .unwrap();
            v.metrics.services[3].amplification
        };
        let sentence = format!(
            "**db** receives {:.3} attempts per logical request with **3 retries** and {:.3} with **no retries**.",
            db("3 retries"),
            db("no retries")
        );
        assert!(db("3 retries") > 4.0 * db("no retries"));
        assert!(md.contains(&sentence), "{sentence}");
        assert!(md.contains("has 2.0 % of its requests answered by a fallback"));
        assert!(!md.contains("\n\n\n"), "no double blank lines");
    }
}

/// What the tests of the sections share.
#[cfg(test)]
mod testing {
    use crate::engine::SimDuration;
    use crate::metrics::Metrics;
    use crate::metrics::VariantResult;

    /// A variant that ran to the end with 1,000 requests, all successful, its other numbers
    /// set by `set`, and no spread over replications.
    pub(super) fn variant(name: &str, set: impl FnOnce(&mut Metrics)) -> VariantResult {
        let mut metrics = Metrics {
            requests: 1000.0,
            succeeded: 1000.0,
            services: vec![Default::default()],
            ..Metrics::default()
        };
        set(&mut metrics);
        VariantResult {
            name: name.to_string(),
            metrics,
            ci95: Metrics::default(),
            series: Vec::new(),
            latency: Vec::new(),
            success_latency_bins: Vec::new(),
            bucket: SimDuration::from_secs(1),
            truncations: Vec::new(),
            examples: Vec::new(),
            service_series: Vec::new(),
            replica_series: Vec::new(),
        }
    }
}
