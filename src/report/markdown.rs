//! `report.md`: a page a team can paste into a design review. What the scenario models in
//! words, the results with their 95 % intervals, findings written as sentences computed from
//! the numbers, and every figure with a caption saying what to look at.

use std::fmt::Write as _;

use super::value_text;
use crate::engine::{SimDuration, SimTime};
use crate::metrics::{ExperimentResult, VariantResult};
use crate::metrics::{Metric, Metrics};
use crate::model::{
    Backoff, BreakerMode, BreakerWindow, BudgetKind, Discipline, Dist, FaultEffect, Outage,
    Outcome, Scope,
};
use crate::scenario::{
    Experiment, HedgeDelay, Policy, RetryAfter, Scenario, Server, ServerKind, Workload,
    percentile_text,
};

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
    let mut out = String::new();
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let point = &result.points[focus];
    let _ = writeln!(out, "# {}\n", escape(&experiment.name));
    if let Some(d) = &experiment.description {
        let _ = writeln!(out, "{d}\n");
    }

    let _ = writeln!(out, "## What this models\n");
    let scenarios: Vec<&Scenario> = experiment.points[focus]
        .variants
        .iter()
        .map(|v| &v.scenario)
        .collect();
    let base = describe(scenarios[0]);
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
        let values: Vec<String> = s.values.iter().map(|v| escape(&v.to_string())).collect();
        let value = point
            .value
            .as_ref()
            .map_or(String::new(), |v| escape(&v.to_string()));
        match (&s.second, &experiment.points[focus].second_value) {
            (Some(second), Some(y)) => {
                let seconds: Vec<String> = second
                    .values
                    .iter()
                    .map(|v| escape(&v.to_string()))
                    .collect();
                let y = escape(&y.to_string());
                let _ = writeln!(
                    out,
                    "- Every variant runs at every pair of a value of {} ({}) and a value of {} ({}): {} points. Results below are at {} = {value}, {} = {y}.",
                    code(&s.path),
                    values.join(", "),
                    code(&second.path),
                    seconds.join(", "),
                    experiment.points.len(),
                    code(&s.path),
                    code(&second.path),
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "- Every variant runs at every value of {}: {}. Results below are at {} = {value}.",
                    code(&s.path),
                    values.join(", "),
                    code(&s.path),
                );
            }
        }
    }
    let _ = writeln!(out, "\nThe variants:\n");
    for (v, sc) in point.variants.iter().zip(&scenarios) {
        let differs: Vec<String> = describe(sc)
            .into_iter()
            .filter(|l| !base.contains(l))
            .collect();
        if differs.is_empty() {
            let _ = writeln!(out, "- **{}**: as above.", escape(&v.name));
        } else {
            let _ = writeln!(out, "- **{}**: {}", escape(&v.name), differs.join(" "));
        }
    }

    // With a sweep, the table and the findings are at one point of it: say which.
    let at_point = match (&experiment.sweep, &point.value) {
        (Some(s), Some(x)) => {
            let mut at = format!(
                " at {} = {}",
                escape(&s.label),
                escape(&value_text(Some(x)))
            );
            if let (Some(second), Some(y)) = (&s.second, &experiment.points[focus].second_value) {
                let _ = write!(
                    at,
                    ", {} = {}",
                    escape(&second.label),
                    escape(&value_text(Some(y)))
                );
            }
            at
        }
        _ => String::new(),
    };
    let _ = writeln!(out, "\n## Results{at_point}\n");
    if reps > 1 {
        let _ = writeln!(
            out,
            "Means over {reps} replications, ± the 95 % confidence half-width.\n"
        );
    }
    // In a call graph the top-level numbers describe the clients and the entry service, and
    // a fallback's answer is neither a success nor a failure.
    let graph = scenarios.iter().any(|s| s.is_graph());
    let server = match scenarios.first() {
        Some(s) if graph => format!("**{}**", escape(&s.services[0].name)),
        _ => "the server".to_string(),
    };
    if graph {
        let _ = writeln!(
            out,
            "The columns describe the clients and the entry service, {server}: work and amplification count the attempts that reached it; every service and call has its own table below. A request that a fallback answered is degraded, neither a success nor a failure: its share stands between the two.\n"
        );
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
    results_table(&mut out, &point.variants, &scenarios, reps > 1, graph);
    for v in &point.variants {
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
        }
    }
    if graph {
        graph_section(
            &mut out,
            &experiment.points[focus].variants,
            &point.variants,
            reps > 1,
        );
    }
    theory_section(&mut out, &scenarios, &point.variants);

    for note in truncation_notes(&point.variants) {
        let _ = writeln!(out, "\n> {note}");
    }
    let _ = writeln!(out, "\n## Findings{at_point}\n");
    for f in findings_at(&point.variants, &server) {
        let _ = writeln!(out, "- {f}");
    }
    for f in graph_findings(&experiment.points[focus].variants, &point.variants) {
        let _ = writeln!(out, "- {f}");
    }
    let along = sweep_findings(experiment, result);
    if !along.is_empty() {
        let _ = writeln!(out, "\n### Along the sweep\n");
        for f in along {
            let _ = writeln!(out, "- {f}");
        }
    }
    recovery_section(&mut out, &scenarios, &point.variants, &server);
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

/// The columns of the results table: latency is the latency of successful requests, with the
/// failure share beside it.
const RESULT_COLUMNS: [Metric; 9] = [
    Metric::REQUESTS,
    Metric::SUCCESS_RATE,
    Metric::FAILURE_RATE,
    Metric::ATTEMPTS,
    Metric::AMPLIFICATION,
    Metric::SUCCESS_P50,
    Metric::SUCCESS_P99,
    Metric::COMPLETION,
    Metric::WASTED,
];

/// Columns shown when some variant has a non-zero value: what retry budgets, breakers,
/// fail-fast outcomes, hedging and idempotency keys did.
const OPTIONAL_COLUMNS: [Metric; 12] = [
    Metric::FAILURE_P50,
    Metric::BUDGET_DENIALS,
    Metric::BREAKER_REFUSALS,
    Metric::BREAKER_OPEN,
    Metric::HEDGES,
    Metric::HEDGE_WINS,
    Metric::CANCELLED,
    Metric::SHED,
    Metric::DUPLICATES,
    Metric::DUPLICATE_CALLS,
    Metric::REPLAYED,
    Metric::FAILED_THROTTLED_LOCALLY,
];

fn results_table(
    out: &mut String,
    variants: &[VariantResult],
    scenarios: &[&Scenario],
    with_ci: bool,
    graph: bool,
) {
    // The server's own end, when it went on serving well after the last request ended (work
    // its clients had abandoned): completion time alone would hide that drain.
    let drains = variants.iter().any(|v| {
        v.metrics.server.busy_until_ms > (1.0 + RELATIVE) * v.metrics.makespan_ms.max(1.0)
    });
    let cols: Vec<Metric> = RESULT_COLUMNS
        .into_iter()
        .chain(drains.then_some(Metric::BUSY_UNTIL))
        .chain(
            OPTIONAL_COLUMNS
                .into_iter()
                .filter(|k| variants.iter().any(|v| k.value(&v.metrics) != 0.0)),
        )
        .collect();
    // A call graph counts a fallback's answer with the successes in latency, and shows the
    // share of such answers right after the success share.
    let title = |k: &Metric| super::charts::metric_title(k, graph);
    let _ = write!(out, "| variant |");
    for k in &cols {
        let _ = write!(out, " {} |", title(k));
        if graph && *k == Metric::SUCCESS_RATE {
            let _ = write!(out, " degraded (%) |");
        }
    }
    let _ = write!(out, "\n|---|");
    for k in &cols {
        let _ = write!(out, "---:|");
        if graph && *k == Metric::SUCCESS_RATE {
            let _ = write!(out, "---:|");
        }
    }
    let _ = writeln!(out);
    for (v, sc) in variants.iter().zip(scenarios) {
        let mark = if v.is_truncated() { " (truncated)" } else { "" };
        let _ = write!(out, "| {}{mark} |", escape(&v.name));
        for k in &cols {
            let cell = if super::produces(k, sc) {
                k.format_estimate(&v.metrics, &v.ci95, with_ci)
            } else {
                "-".to_string()
            };
            let _ = write!(out, " {cell} |");
            if graph && *k == Metric::SUCCESS_RATE {
                let _ = write!(out, " {} |", super::table::degraded_cell(v, with_ci));
            }
        }
        let _ = writeln!(out);
    }
}

/// A call graph's "Per service" and "Per call" tables, one of each per variant that is a
/// call graph, at the point the results are at.
fn graph_section(
    out: &mut String,
    ran: &[crate::scenario::Variant],
    variants: &[VariantResult],
    with_ci: bool,
) {
    let pairs: Vec<(&VariantResult, &crate::scenario::Variant)> = variants
        .iter()
        .zip(ran)
        .filter(|(_, r)| r.scenario.is_graph())
        .collect();
    let cols = super::table::service_columns(&pairs);
    let _ = writeln!(out, "\n### Per service\n");
    let _ = writeln!(
        out,
        "What reached each service, retries from its callers included. Attempts per request divides them by the logical requests the clients started, so a service behind a caller that retries sees more than 1 even when the clients never retry. Utilization counts a worker busy while it waits for its service's own calls; goodput is the successful answers to callers still waiting, per second."
    );
    for (v, r) in &pairs {
        let mark = if v.is_truncated() { " (truncated)" } else { "" };
        let _ = writeln!(out, "\n**{}**{mark}\n", escape(&v.name));
        let _ = write!(out, "| service |");
        for k in &cols {
            let _ = write!(out, " {} |", k.title());
        }
        let _ = writeln!(out, "\n|---|{}", "---:|".repeat(cols.len()));
        let names = r.scenario.services.iter().enumerate();
        for ((m, h), (i, s)) in v.metrics.services.iter().zip(&v.ci95.services).zip(names) {
            let entry = if i == 0 { " (entry)" } else { "" };
            let _ = write!(out, "| {}{entry} |", escape(&s.name));
            for k in &cols {
                let cell = if super::service_produces(k, &r.scenario, i) {
                    k.format_estimate(m, h, with_ci)
                } else {
                    "-".to_string()
                };
                let _ = write!(out, " {cell} |");
            }
            let _ = writeln!(out);
        }
    }
    if pairs.iter().all(|(v, _)| v.metrics.calls.is_empty()) {
        return;
    }
    let cols = super::table::call_columns(pairs.iter().flat_map(|(v, _)| &v.metrics.calls));
    let _ = writeln!(out, "\n### Per call\n");
    let _ = writeln!(
        out,
        "Attempts per request counts the attempts sent on a call per logical request the clients started. Failed counts the calls that failed for good; degraded those of them a fallback answered; bulkhead full the attempts a full bulkhead refused."
    );
    let routes = super::table::has_routes(pairs.iter().flat_map(|(v, _)| &v.metrics.calls));
    if routes {
        let _ = writeln!(
            out,
            "Route success is, for a call of the entry service that only part of the requests make, the share of the requests on that route that succeeded in full, whether or not they reached the call (`-` for other calls)."
        );
    }
    for (v, r) in &pairs {
        let mark = if v.is_truncated() { " (truncated)" } else { "" };
        let _ = writeln!(out, "\n**{}**{mark}\n", escape(&v.name));
        let _ = write!(out, "| call |");
        for k in &cols {
            let _ = write!(out, " {} |", k.title());
        }
        if routes {
            let _ = write!(out, " route success (%) |");
        }
        let n = cols.len() + usize::from(routes);
        let _ = writeln!(out, "\n|---|{}", "---:|".repeat(n));
        let names = super::table::call_names(r);
        let calls = super::table::calls_of(r);
        for (i, ((m, h), (from, to))) in v
            .metrics
            .calls
            .iter()
            .zip(&v.ci95.calls)
            .zip(&names)
            .enumerate()
        {
            let _ = write!(out, "| {} → {} |", escape(from), escape(to));
            for k in &cols {
                let cell = super::table::call_cell(k, calls.get(i).copied(), (m, h), with_ci);
                let _ = write!(out, " {cell} |");
            }
            if routes {
                let _ = write!(out, " {} |", super::table::route_success(m, h, with_ci));
            }
            let _ = writeln!(out);
        }
    }
}

/// A name (or a sweep value, a label) as Markdown text: every character that could start
/// markup, an HTML tag or an entity, or break a table is backslash-escaped, and line breaks and
/// other control characters become spaces, so the text reads as itself on one line.
fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '|' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '\\' | '&' | '~' | '!' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A setting's path as inline code; one holding a backtick or a line break (which would end
/// the code span) is written as escaped text instead.
fn code(text: &str) -> String {
    if text.contains('`') || text.chars().any(char::is_control) {
        escape(text)
    } else {
        format!("`{text}`")
    }
}

/// How far apart two estimates must be for a finding: the 95 % intervals must not overlap,
/// and the difference must matter: at least [`RELATIVE`] of the larger value, or for shares
/// (printed in %) at least [`POINTS`] percentage points.
pub const RELATIVE: f64 = 0.05;
/// The smallest difference between two shares that a finding reports, as a fraction (1 point).
pub const POINTS: f64 = 0.01;

/// An estimate: mean and 95 % half-width, in the metric's stored unit.
#[derive(Debug, Clone, Copy)]
struct Est {
    mean: f64,
    half: f64,
}

fn est(v: &VariantResult, k: &Metric) -> Est {
    Est {
        mean: k.value(&v.metrics),
        half: k
            .estimate(&v.metrics, &v.ci95)
            .map_or(0.0, |(_, h)| h / k.scale),
    }
}

/// Whether `a` and `b` differ really (intervals apart) and meaningfully (see [`RELATIVE`]).
fn differ(k: &Metric, a: Est, b: Est) -> bool {
    differ_in(k.unit, a, b)
}

/// [`differ`] for a metric printed in `unit`.
fn differ_in(unit: crate::metrics::Unit, a: Est, b: Est) -> bool {
    let apart = (a.mean - b.mean).abs() > a.half + b.half;
    let gap = (a.mean - b.mean).abs();
    let matters = match unit {
        crate::metrics::Unit::Percent => gap >= POINTS,
        _ => gap >= RELATIVE * a.mean.abs().max(b.mean.abs()),
    };
    apart && matters
}

/// A metric's value as a sentence prints it: scaled, with its decimals and unit.
fn say(k: &Metric, x: f64) -> String {
    match k.unit {
        crate::metrics::Unit::Millis => format!("{} ms", significant(x * k.scale)),
        crate::metrics::Unit::Seconds => format!("{} s", significant(x * k.scale)),
        crate::metrics::Unit::Percent => format!("{} %", k.format(x * k.scale)),
        crate::metrics::Unit::Times => format!("{}x", k.format(x * k.scale)),
        _ => k.format(x * k.scale),
    }
}

/// The means of `k` over a group of variants as a sentence prints them: one value, or the
/// range "low-high" when they differ in print.
fn span(k: &Metric, group: &[&VariantResult]) -> String {
    let values = group.iter().map(|v| k.value(&v.metrics));
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    let (a, b) = (say(k, lo), say(k, hi));
    if a == b {
        a
    } else {
        // "796-812", "93.7-94.0 %", "1.947-1.967x": the unit once, after the range.
        let unit = b.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        format!("{}-{b}", a.trim_end_matches(unit))
    }
}

/// Names in bold, joined: "**a**", "**a** and **b**", "**a**, **b** and **c**".
fn names(vs: &[&VariantResult]) -> String {
    let bold: Vec<String> = vs
        .iter()
        .map(|v| format!("**{}**", escape(&v.name)))
        .collect();
    match bold.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The variants a comparison may name: those that ran to the end. A truncated variant's
/// numbers cover only what finished, so it never wins or loses a comparison.
fn comparable(variants: &[VariantResult]) -> Vec<&VariantResult> {
    variants.iter().filter(|v| !v.is_truncated()).collect()
}

/// The best and worst of `k` among `vs` (by its better direction), with every variant not
/// really different from the best beside it. `None` without a real, meaningful difference.
fn extremes<'a>(
    vs: &[&'a VariantResult],
    k: &Metric,
    better_high: bool,
) -> Option<(Vec<&'a VariantResult>, &'a VariantResult)> {
    let key = |v: &&VariantResult| k.value(&v.metrics);
    let best = if better_high {
        vs.iter().max_by(|a, b| key(a).total_cmp(&key(b)))?
    } else {
        vs.iter().min_by(|a, b| key(a).total_cmp(&key(b)))?
    };
    let worst = if better_high {
        vs.iter().min_by(|a, b| key(a).total_cmp(&key(b)))?
    } else {
        vs.iter().max_by(|a, b| key(a).total_cmp(&key(b)))?
    };
    if !differ(k, est(best, k), est(worst, k)) {
        return None;
    }
    let group: Vec<&VariantResult> = vs
        .iter()
        .filter(|v| !differ(k, est(v, k), est(best, k)))
        .copied()
        .collect();
    Some((group, worst))
}

/// Sentences computed from the numbers at one point (no sweep, or the sweep's focus value):
/// a finding only where the 95 % intervals are apart and the difference matters, never about
/// a truncated variant, never about a difference the setup forces (work is compared per
/// request when the variants start different numbers of requests).
pub fn findings(variants: &[VariantResult]) -> Vec<String> {
    findings_at(variants, "the server")
}

/// [`findings`], naming what the top-level numbers describe `server`: "the server", or a call
/// graph's entry service, which the clients' attempts reach.
fn findings_at(variants: &[VariantResult], server: &str) -> Vec<String> {
    let mut out = Vec::new();
    let vs = comparable(variants);
    let plural = |g: &[&VariantResult], one: &str, many: &str| {
        if g.len() == 1 {
            one.to_string()
        } else {
            many.to_string()
        }
    };
    if vs.len() > 1 {
        let same_requests = extremes(&vs, &Metric::REQUESTS, true).is_none();
        // Work: attempts when the variants start the same requests, else per request.
        let work = if same_requests {
            Metric::ATTEMPTS
        } else {
            Metric::AMPLIFICATION
        };
        match extremes(&vs, &work, false) {
            Some((best, worst)) => {
                let w = est(worst, &work);
                let what = if same_requests {
                    format!("attempts to {server}")
                } else {
                    format!("attempts per request to {server}")
                };
                let fewer = |v: &&VariantResult| 100.0 * (1.0 - work.value(&v.metrics) / w.mean);
                let most = best.iter().map(fewer).fold(f64::NEG_INFINITY, f64::max);
                let least = best.iter().map(fewer).fold(f64::INFINITY, f64::min);
                let pct = if format!("{most:.0}") == format!("{least:.0}") {
                    format!("{most:.0}")
                } else {
                    format!("{least:.0}-{most:.0}")
                };
                out.push(format!(
                    "{} {} {pct} % fewer {what} than **{}** ({} against {}).",
                    names(&best),
                    plural(&best, "sends", "send"),
                    escape(&worst.name),
                    span(&work, &best),
                    say(&work, w.mean),
                ));
            }
            None => out.push(format!(
                "Every variant that ran to the end puts about the same {} on {server} (no two differ by more than their 95 % intervals and {:.0} %).",
                if same_requests { "work" } else { "work per request" },
                100.0 * RELATIVE
            )),
        }
        let k = Metric::SUCCESS_RATE;
        if let Some((best, worst)) = extremes(&vs, &k, true) {
            out.push(format!(
                "{} {} for {} of requests, **{}** for only {} ({} fail).",
                names(&best),
                plural(&best, "succeeds", "succeed"),
                span(&k, &best),
                escape(&worst.name),
                say(&k, est(worst, &k).mean),
                say(
                    &Metric::FAILURE_RATE,
                    est(worst, &Metric::FAILURE_RATE).mean
                ),
            ));
        }
        // Latency and completion time follow the load a variant is given: with different
        // numbers of requests, comparing them would report the setup, not the policy.
        if !same_requests {
            let k = Metric::REQUESTS;
            let lo = vs
                .iter()
                .map(|v| k.value(&v.metrics))
                .fold(f64::INFINITY, f64::min);
            let hi = vs.iter().map(|v| k.value(&v.metrics)).fold(0.0, f64::max);
            out.push(format!(
                "The variants start different numbers of requests ({} to {}), so their latency and completion times are not compared here: they follow from the load each is given.",
                k.format(lo),
                k.format(hi)
            ));
        }
        // Latency: of successful requests only, with each side's failure share beside it, so
        // that a policy which fails fast does not look fast.
        // The latency of a few survivors says nothing about a variant most of whose requests
        // failed, so only variants with at least half their requests successful take part.
        let with_successes: Vec<&VariantResult> = vs
            .iter()
            .filter(|v| v.metrics.succeeded > 0.0 && v.metrics.failure_rate <= 0.5)
            .copied()
            .collect();
        let k = Metric::SUCCESS_P99;
        if let Some((best, worst)) = extremes(&with_successes, &k, false).filter(|_| same_requests)
        {
            let fails = |v: &VariantResult| say(&Metric::FAILURE_RATE, v.metrics.failure_rate);
            // A fallback's answer counts with the successes' latency: call it what it is.
            let answered = if vs
                .iter()
                .any(|v| v.metrics.degraded.is_some_and(|d| d > 0.0))
            {
                "answered requests (successes and fallback answers)"
            } else {
                "successful requests"
            };
            out.push(format!(
                "The slowest 1 % of {answered} take at least {} with **{}** ({} of its requests fail) and at least {} with {} ({} fail{}).",
                say(&k, est(worst, &k).mean),
                escape(&worst.name),
                fails(worst),
                span(&k, &best),
                names(&best),
                span(&Metric::FAILURE_RATE, &best),
                "",
            ));
        }
        let k = Metric::COMPLETION;
        if let Some((best, worst)) = extremes(&vs, &k, false).filter(|_| same_requests) {
            out.push(format!(
                "The last request ends after {} with **{}** and after {} with {}.",
                say(&k, est(worst, &k).mean),
                escape(&worst.name),
                span(&k, &best),
                names(&best),
            ));
        }
    }
    let k = Metric::AMPLIFICATION;
    if let Some(top) = vs
        .iter()
        .max_by(|a, b| k.value(&a.metrics).total_cmp(&k.value(&b.metrics)))
    {
        let amp = est(top, &k);
        if amp.mean >= 1.5 {
            let group: Vec<&VariantResult> = vs
                .iter()
                .filter(|v| !differ(&k, est(v, &k), amp))
                .copied()
                .collect();
            if group.len() < vs.len() || vs.len() == 1 {
                out.push(format!(
                    "{} {} the load most, {}: each logical request reaches {server} {} times on average.",
                    names(&group),
                    plural(&group, "amplifies", "amplify"),
                    span(&k, &group),
                    span(&k, &group).trim_end_matches('x'),
                ));
            }
        }
    }
    // What each variant's failures and policies did, one sentence per variant that ran to
    // the end.
    for v in &vs {
        let m = &v.metrics;
        let mut parts: Vec<String> = Vec::new();
        let total = m.failed.total();
        if m.failure_rate >= 0.01 && total > 0.0 {
            let (o, n) = Outcome::FAILURES
                .iter()
                .map(|o| (*o, m.failed.get(*o)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((Outcome::Error, 0.0));
            let how = if n >= total {
                format!("all with `{o}`")
            } else {
                // Never "100 %" unless it is all of them.
                let share = 100.0 * n / total;
                let share = if share >= 99.5 {
                    format!("{share:.1}")
                } else {
                    format!("{share:.0}")
                };
                format!("{share} % of them with `{o}`")
            };
            parts.push(format!(
                "fails {} of requests ({how})",
                say(&Metric::FAILURE_RATE, m.failure_rate)
            ));
        }
        if let Some(d) = v.degraded_rate().filter(|d| d.mean >= 0.01) {
            parts.push(format!(
                "a fallback answered {:.1} % of its requests (degraded: neither a success nor a failure)",
                100.0 * d.mean
            ));
        }
        if m.server.served > 0.0 && m.server.wasted / m.server.served >= 0.01 {
            parts.push(format!(
                "wastes {:.0} % of {server}'s work on attempts {}",
                100.0 * m.server.wasted / m.server.served,
                unawaited(m)
            ));
        }
        if m.budget_denials > 0.0 && m.requests > 0.0 {
            parts.push(format!(
                "its retry budget denied {:.0} retries, so {:.1} % of requests ended `budget_exhausted` instead of retrying",
                m.budget_denials,
                100.0 * m.failed.budget_exhausted / m.requests
            ));
        }
        if m.breaker.refusals > 0.0 {
            parts.push(format!(
                "its circuit breakers were open {:.1} % of the time and refused {:.0} attempts, which never reached {server}",
                100.0 * m.breaker.open_fraction,
                m.breaker.refusals
            ));
        }
        if m.hedges > 0.0 && m.requests > 0.0 {
            parts.push(format!(
                "sends {:.1} hedges per 100 requests, and a hedge answers first for {:.1} % of requests",
                100.0 * m.hedges / m.requests,
                100.0 * m.hedge_wins / m.requests
            ));
        }
        if m.server.cancelled > 0.0 {
            parts.push(format!(
                "has {server} drop {:.0} abandoned attempts it cancelled before they started",
                m.server.cancelled
            ));
        }
        if m.server.duplicates > 0.0 {
            parts.push(format!(
                "makes {server} execute {:.0} requests more than once: {:.0} duplicate side effects (a double charge, a second email)",
                m.server.duplicate_calls, m.server.duplicates
            ));
        }
        if m.server.replayed > 0.0 {
            parts.push(format!(
                "has {server} answer {:.0} repeats from its idempotency key memory instead of executing them again",
                m.server.replayed
            ));
        }
        if m.server.shed > 0.0 && m.attempts > 0.0 {
            parts.push(format!(
                "has {server} shed {:.0} attempts ({:.1} % of those that reached it) that had waited too long in a standing queue, answering them `rejected` at once instead of serving them late",
                m.server.shed,
                100.0 * m.server.shed / m.attempts
            ));
        }
        if !parts.is_empty() {
            let (first, rest) = parts.split_first().expect("not empty");
            let mut line = format!("**{}** {first}", escape(&v.name));
            if let Some((last, middle)) = rest.split_last() {
                for p in middle {
                    let _ = write!(line, "; {p}");
                }
                let _ = write!(line, "; {last}");
            }
            line.push('.');
            out.push(line);
        }
    }
    out
}

/// What duplicate side effects and idempotency keys did at the services `services` (their
/// numbers and names), in words.
fn duplicate_words(services: &[(crate::metrics::ServiceMetrics, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (s, name) in services {
        if s.duplicates > 0.0 {
            out.push(format!(
                "{name} executed {:.0} calls more than once: {:.0} duplicate side effects (a double charge, a second email)",
                s.duplicate_calls, s.duplicates
            ));
        }
        if s.replayed > 0.0 {
            out.push(format!(
                "{name} answered {:.0} repeats from its idempotency key memory instead of executing them again",
                s.replayed
            ));
        }
    }
    out
}

/// Findings of a call graph: for each service below the entry, which variants send it the
/// fewest and the most attempts per logical request, where their 95 % intervals are apart and
/// the difference matters (the entry's is the amplification above). Only variants that ran
/// to the end and have the same service at the same place take part.
fn graph_findings(ran: &[crate::scenario::Variant], variants: &[VariantResult]) -> Vec<String> {
    use crate::metrics::ServiceMetric;
    let mut out = Vec::new();
    let vs: Vec<(&VariantResult, &crate::scenario::Variant)> = variants
        .iter()
        .zip(ran)
        .filter(|(v, r)| !v.is_truncated() && r.scenario.is_graph())
        .collect();
    let Some((_, first)) = vs.first() else {
        return out;
    };
    let k = ServiceMetric::AMPLIFICATION;
    for (i, service) in first.scenario.services.iter().enumerate().skip(1) {
        let at: Vec<(&VariantResult, Est)> = vs
            .iter()
            .filter(|(_, r)| {
                r.scenario
                    .services
                    .get(i)
                    .is_some_and(|s| s.name == service.name)
            })
            .filter_map(|(v, _)| {
                let (m, h) = (v.metrics.services.get(i)?, v.ci95.services.get(i)?);
                Some((
                    *v,
                    Est {
                        mean: k.value(m),
                        half: k.value(h),
                    },
                ))
            })
            .collect();
        if at.len() < 2 {
            continue;
        }
        let cmp =
            |a: &&(&VariantResult, Est), b: &&(&VariantResult, Est)| a.1.mean.total_cmp(&b.1.mean);
        let (Some(low), Some(high)) = (at.iter().min_by(cmp), at.iter().max_by(cmp)) else {
            continue;
        };
        if !differ_in(k.unit, low.1, high.1) {
            continue;
        }
        let group: Vec<&VariantResult> = at
            .iter()
            .filter(|(_, e)| !differ_in(k.unit, *e, low.1))
            .map(|(v, _)| *v)
            .collect();
        let lo = group
            .iter()
            .filter_map(|v| v.metrics.services.get(i))
            .map(|m| k.value(m));
        let (a, b) = (
            lo.clone().fold(f64::INFINITY, f64::min),
            lo.fold(0.0, f64::max),
        );
        let fewest = if k.format(a) == k.format(b) {
            k.format(a)
        } else {
            format!("{}-{}", k.format(a), k.format(b))
        };
        out.push(format!(
            "**{}** receives {} attempts per logical request with **{}** and {fewest} with {}.",
            escape(&service.name),
            k.format(high.1.mean),
            escape(&high.0.name),
            names(&group),
        ));
    }
    // Duplicate side effects and keys below the entry (the entry's are in the variant's
    // sentence of the findings).
    for (v, r) in &vs {
        let below: Vec<(crate::metrics::ServiceMetrics, String)> = v
            .metrics
            .services
            .iter()
            .zip(&r.scenario.services)
            .skip(1)
            .map(|(m, s)| (*m, format!("`{}`", escape(&s.name))))
            .collect();
        let words = duplicate_words(&below);
        if !words.is_empty() {
            out.push(format!(
                "With **{}**, {}.",
                escape(&v.name),
                words.join("; ")
            ));
        }
    }
    out
}

/// One caveat per truncated variant: it hit a limit, its numbers cover only what finished, and
/// it takes part in no finding.
pub fn truncation_notes(variants: &[VariantResult]) -> Vec<String> {
    variants
        .iter()
        .filter(|v| v.is_truncated())
        .map(|v| {
            format!(
                "**{}** hit a limit and stopped early in {:.0} % of its replications (see the warning in the table output and `truncated_replications` in summary.json): its numbers cover only what finished, so it is marked \"(truncated)\" and left out of the findings.",
                escape(&v.name),
                100.0 * v.metrics.truncated
            )
        })
        .collect()
}

/// Findings along a one-axis sweep of numbers: how each headline metric moves from the first
/// value to the last (only where the two ends really and meaningfully differ), where two
/// variants trade places, and where recovery stops. Truncated points are skipped.
pub fn sweep_findings(experiment: &Experiment, result: &ExperimentResult) -> Vec<String> {
    let mut out = Vec::new();
    let Some(sweep) = experiment.sweep.as_ref() else {
        return out;
    };
    let line = sweep.first_axis_points();
    if line.len() < 2 {
        return out;
    }
    let path = &escape(&sweep.label);
    let value = |k: usize| escape(&value_text(result.points[k].value.as_ref()));
    let at_second = match (
        &sweep.second,
        experiment.points[line[0]].second_value.as_ref(),
    ) {
        (Some(second), Some(y)) => format!(
            " (at {} = {})",
            escape(&second.label),
            escape(&value_text(Some(y)))
        ),
        _ => String::new(),
    };
    let variants = result.points[0].variants.len();
    for j in 0..variants {
        let name = escape(&result.points[0].variants[j].name);
        let at = |k: usize| &result.points[k].variants[j];
        let ok: Vec<usize> = line
            .iter()
            .copied()
            .filter(|&k| !at(k).is_truncated())
            .collect();
        let (Some(&first), Some(&last)) = (ok.first(), ok.last()) else {
            continue;
        };
        if first == last {
            continue;
        }
        let mut moves = Vec::new();
        for k in [
            Metric::AMPLIFICATION,
            Metric::SUCCESS_RATE,
            Metric::SUCCESS_P99,
        ] {
            // Success latency where nothing succeeded does not exist, and where most requests
            // failed it is the latency of a few survivors: neither is a trend.
            if k.get(&at(first).metrics).is_none() || k.get(&at(last).metrics).is_none() {
                continue;
            }
            if k.unit == crate::metrics::Unit::Millis
                && (at(first).metrics.failure_rate > 0.5 || at(last).metrics.failure_rate > 0.5)
            {
                continue;
            }
            let (a, b) = (est(at(first), &k), est(at(last), &k));
            if differ(&k, a, b) {
                moves.push(format!(
                    "{} {} from {} to {}",
                    k.label,
                    if b.mean > a.mean { "rises" } else { "falls" },
                    say(&k, a.mean),
                    say(&k, b.mean)
                ));
            }
        }
        if !moves.is_empty() {
            out.push(format!(
                "From {path} = {} to {}{at_second}, **{name}**'s {}.",
                value(first),
                value(last),
                moves.join(", its ")
            ));
        }
        // Where recovery stops: the last value at which every replication recovered, and the
        // first after it at which fewer than half did.
        let rec = |k: usize| at(k).metrics.recovery.map(|r| r.recovered_fraction);
        if ok.iter().all(|&k| rec(k).is_some()) {
            let all = ok.iter().rposition(|&k| rec(k) == Some(1.0));
            let stops = ok.iter().position(|&k| rec(k).is_some_and(|f| f < 0.5));
            if let (Some(a), Some(b)) = (all, stops)
                && a < b
                && ok[..=a].iter().all(|&k| rec(k) == Some(1.0))
            {
                out.push(format!(
                    "**{name}** recovers in every replication up to {path} = {}{at_second}; from {} on, fewer than half of its replications recover.",
                    value(ok[a]),
                    value(ok[b])
                ));
            }
        }
    }
    // Crossings: where two variants trade places in amplification, both sides real.
    let k = Metric::AMPLIFICATION;
    for a in 0..variants {
        for b in a + 1..variants {
            let mut sign = 0i8;
            let mut from: Option<usize> = None;
            for &p in &line {
                let (va, vb) = (&result.points[p].variants[a], &result.points[p].variants[b]);
                if va.is_truncated() || vb.is_truncated() {
                    continue;
                }
                let (ea, eb) = (est(va, &k), est(vb, &k));
                if !differ(&k, ea, eb) {
                    continue;
                }
                let s = if ea.mean < eb.mean { -1 } else { 1 };
                if sign != 0 && s != sign {
                    let (lo, hi) = if sign < 0 { (a, b) } else { (b, a) };
                    out.push(format!(
                        "**{}** amplifies less than **{}** up to {path} = {}, and more from {}{at_second}.",
                        escape(&result.points[p].variants[lo].name),
                        escape(&result.points[p].variants[hi].name),
                        value(from.unwrap_or(p)),
                        value(p)
                    ));
                }
                sign = s;
                from = Some(p);
            }
        }
    }
    out
}

/// Theory beside simulation, for the variants a closed form describes exactly.
fn theory_section(out: &mut String, scenarios: &[&Scenario], variants: &[VariantResult]) {
    let rows: Vec<(&VariantResult, super::theory::Prediction)> = variants
        .iter()
        .zip(scenarios)
        .flat_map(|(v, s)| {
            super::theory::predictions(s)
                .into_iter()
                .map(move |p| (v, p))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Theory beside simulation\n");
    let _ = writeln!(
        out,
        "Where a closed form describes a variant exactly, its prediction sits beside the simulated mean and 95 % interval.\n"
    );
    let _ = writeln!(
        out,
        "| variant | quantity | formula | theory | simulated | inside the interval |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|:---:|");
    for (v, p) in rows {
        let k = p.metric;
        let e = est(v, &k);
        let inside = (e.mean - p.value).abs() <= e.half;
        let d = k.decimals + 1;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.d$} | {} | {} |",
            escape(&v.name),
            k.title(),
            p.formula,
            p.value * k.scale,
            k.format_estimate(&v.metrics, &v.ci95, true),
            if inside { "yes" } else { "no" }
        );
    }
}

/// The "Recovery" section: for each variant, in words, the goodput before the trigger, the
/// trigger windows, whether and when it recovered (counting replications rather than averaging
/// them, with the Wilson interval of the share), how deep goodput dipped and for how long it
/// stayed under 90 %. Nothing without triggers.
fn recovery_section(
    out: &mut String,
    scenarios: &[&Scenario],
    variants: &[VariantResult],
    server: &str,
) {
    if !variants.iter().any(|v| v.metrics.recovery.is_some()) {
        return;
    }
    let windows = |s: &Scenario| -> String {
        let parts: Vec<String> = s
            .triggers()
            .iter()
            .map(|t| {
                format!(
                    "from {} to {}",
                    seconds(t.from.as_millis_f64()),
                    seconds(t.to.as_millis_f64())
                )
            })
            .collect();
        parts.join(", ")
    };
    let all: Vec<String> = scenarios.iter().map(|s| windows(s)).collect();
    let shared = all.windows(2).all(|w| w[0] == w[1]);
    let _ = writeln!(out, "\n## Recovery\n");
    let _ = write!(
        out,
        "A trigger (a load spike or a fault) pushes the system towards overload"
    );
    if shared && !all[0].is_empty() {
        let _ = write!(out, ", here {}", all[0]);
    }
    let _ = writeln!(
        out,
        ". A replication has recovered at time t after the last trigger ends when its goodput (requests that succeeded per second) over [t, t + 5 s) is back to at least 90 % of its level before the first trigger, and its mean from t to the end of the run is too; the drain after new requests stop does not count. A replication that never gets there is metastable: the trigger is gone, the overload is not. The dip is the lowest goodput over 5 s from the trigger's start on, relative to that level; a system can recover at once after the trigger and still have dipped during it.\n"
    );
    for (v, s) in variants.iter().zip(scenarios) {
        let Some(r) = v.metrics.recovery else {
            let _ = writeln!(
                out,
                "- **{}**: no recovery analysis (no trigger, or no time before it to measure goodput).",
                escape(&v.name)
            );
            continue;
        };
        let h = v.ci95.recovery.unwrap_or_default();
        let (n, k) = (r.replications, r.recovered);
        let mut line = format!("- **{}**: ", escape(&v.name));
        if !shared {
            let _ = write!(line, "triggers {}; ", windows(s));
        }
        let _ = write!(
            line,
            "before the trigger it completed {:.1} requests/s. ",
            r.baseline_per_s
        );
        let median = r.median_recovery_s.unwrap_or(0.0);
        let reps = |x: f64| format!("{x:.0} replication{}", if x == 1.0 { "" } else { "s" });
        let interval = if n > 1.0 {
            format!(
                " (95 % interval {:.0}-{:.0} %)",
                100.0 * r.recovered_fraction_lower,
                100.0 * r.recovered_fraction_upper
            )
        } else {
            String::new()
        };
        if k == 0.0 {
            let any = if n == 1.0 {
                String::new()
            } else {
                format!(" in any of its {}{interval}", reps(n))
            };
            let _ = write!(
                line,
                "Metastable: it did not recover by the end of the run{any}."
            );
        } else if k == n {
            let spread = match r.p90_recovery_s {
                Some(p90) if n >= 10.0 && p90 > median => {
                    format!(" (90 % within {p90:.1} s)")
                }
                _ => String::new(),
            };
            let _ = write!(
                line,
                "It recovered in {}{interval}, median {median:.1} s after the trigger ended{spread}.",
                if n == 1.0 {
                    format!("its {}", reps(n))
                } else {
                    format!("all {}", reps(n))
                },
            );
        } else {
            let _ = write!(
                line,
                "{k:.0} of {} ({:.0} %{}) recovered (median {median:.1} s after the trigger ended); the others stayed collapsed to the end: an average of the two would describe no run.",
                reps(n),
                100.0 * k / n,
                if n > 1.0 {
                    format!(
                        ", 95 % interval {:.0}-{:.0} %",
                        100.0 * r.recovered_fraction_lower,
                        100.0 * r.recovered_fraction_upper
                    )
                } else {
                    String::new()
                }
            );
        }
        let pm = |x: f64| {
            if n > 1.0 {
                format!(" ± {x:.1}")
            } else {
                String::new()
            }
        };
        let _ = write!(
            line,
            " Goodput dipped to {:.0} %{} of that level and stayed under 90 % for {:.1}{} s.",
            100.0 * r.dip_fraction,
            pm(100.0 * h.dip_fraction),
            r.below_90_s,
            pm(h.below_90_s),
        );
        let _ = write!(
            line,
            " From the trigger until {}, the load peaked at {:.2} attempts per logical request started (the worst 5 s, or the whole stretch when shorter; mean over replications) and {:.0} % of {server}'s work was wasted on attempts {}.",
            if k == n {
                "it recovered"
            } else if k == 0.0 {
                "the end of the run"
            } else {
                "recovery (or the end of the run)"
            },
            r.peak_amplification,
            100.0 * r.wasted_fraction,
            unawaited(&v.metrics)
        );
        let _ = writeln!(out, "{line}");
    }
}

/// Whose attempts wasted work is spent on: with hedging, the losers of a race as well as
/// the attempts whose client gave up.
fn unawaited(m: &Metrics) -> &'static str {
    if m.hedges > 0.0 {
        "nobody waited for any more (a client had given up, or a hedge had already answered)"
    } else {
        "whose client had already given up"
    }
}

/// With a two-axis sweep, the phase diagram's numbers as a table per variant, laid out as
/// the figure is: the first setting across, the second up (its last value on top).
fn every_pair(out: &mut String, experiment: &Experiment, result: &ExperimentResult) {
    let Some((s, second)) = experiment
        .sweep
        .as_ref()
        .and_then(|s| Some((s, s.second.as_ref()?)))
    else {
        return;
    };
    let m = super::charts::phase_metric(result);
    let _ = writeln!(out, "\n## Every pair of swept values\n");
    // A table wider or longer than a page reads worse than the figure and its CSV.
    if s.values.len() > 12 || second.values.len() > 24 {
        let _ = writeln!(
            out,
            "{} pairs are too many for a table: the phase diagram shows them, and phase-diagram.csv and sweep.csv hold every number.",
            experiment.points.len()
        );
        return;
    }
    let _ = writeln!(
        out,
        "{} (`{}`, in %) for each value of {} (columns) and of {} (rows, its last value on top, as in the phase diagram).",
        capitalized(m.words),
        m.metric.key,
        code(&s.path),
        code(&second.path)
    );
    let header: Vec<String> = s
        .values
        .iter()
        .map(|v| escape(&super::value_text(Some(v))))
        .collect();
    for (k, v) in result.points[0].variants.iter().enumerate() {
        let _ = writeln!(out, "\n**{}**\n", escape(&v.name));
        let _ = writeln!(
            out,
            "| {} \\ {} | {} |",
            escape(&second.path),
            escape(&s.path),
            header.join(" | ")
        );
        let _ = writeln!(out, "|---|{}", "---:|".repeat(header.len()));
        for (j, y) in second.values.iter().enumerate().rev() {
            let cells: Vec<String> = (0..s.values.len())
                .map(|i| {
                    let at = &result.points[s.point_index(i, j)].variants[k];
                    format!("{:.1}", 100.0 * m.metric.value(&at.metrics))
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} |",
                escape(&super::value_text(Some(y))),
                cells.join(" | ")
            );
        }
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

/// A number with about three significant figures (never fewer than the integer digits).
fn significant(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn seconds(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{:.0} s", ms / 1000.0)
    } else if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

/// The scenario in words, one sentence per part.
fn describe(s: &Scenario) -> Vec<String> {
    let mut lines = Vec::new();
    let n = s.clients.count;
    lines.push(match &s.clients.workload {
        Workload::Open(p) => {
            let steps = if p.steps.is_empty() {
                String::new()
            } else {
                let parts: Vec<String> = p
                    .steps
                    .iter()
                    .map(|st| {
                        format!(
                            "{} {}/s at {}",
                            if st.ramp { "ramping to" } else { "then" },
                            st.rate_per_s,
                            st.at
                        )
                    })
                    .collect();
                format!(" ({})", parts.join(", "))
            };
            format!(
                "Clients: {n} open-loop clients sending {} requests/s in all as a Poisson stream{steps}, for {}; everything in flight then drains.",
                p.base_rate, s.duration
            )
        }
        Workload::Closed(c) => {
            let k = c
                .requests_per_client
                .map_or(format!("requests until {}", s.duration), |k| {
                    format!("{k} request{}", if k == 1 { "" } else { "s" })
                });
            let start = if c.start.is_zero() {
                "all starting at once".to_string()
            } else {
                format!("starting after {}", words(&c.start))
            };
            let think = if c.think_time.is_zero() {
                String::new()
            } else {
                format!(", thinking {} between requests", words(&c.think_time))
            };
            format!("Clients: {n} closed-loop clients, one request at a time, {k} each, {start}{think}.")
        }
    });
    if !s.network.latency.is_zero() {
        lines.push(format!(
            "Network: every one-way message takes {}.",
            words(&s.network.latency)
        ));
    }
    if s.is_graph() {
        lines.extend(graph_lines(s));
    } else {
        lines.extend(server_lines(
            s.server(),
            Some(s.policy.retry.retry_after),
            None,
        ));
    }
    let p = &s.policy;
    let policy_from = lines.len();
    if let Some(t) = p.timeout {
        lines.push(format!("Attempts time out after {t}."));
    }
    if let Some(d) = p.deadline {
        lines.push(format!("Requests give up {d} after they start (deadline)."));
    }
    lines.push(match p.retry.max_attempts {
        Some(1) => "No retries: one attempt per request.".to_string(),
        Some(m) => format!("Up to {m} attempts per request."),
        None => "Unlimited attempts per request.".to_string(),
    });
    let scope = |s: Scope| match s {
        Scope::PerClient => "each client its own",
        Scope::Shared => "one shared by all clients",
    };
    if let Some(b) = &p.budget {
        let what = match b.kind {
            BudgetKind::TokenBucket {
                max_tokens,
                token_ratio,
            } => format!(
                "a token bucket (gRPC retry throttling) of {max_tokens} tokens; a failed attempt takes one, a success gives back {token_ratio}, and retries go out only while more than half are left"
            ),
            BudgetKind::RetryQuota {
                initial,
                retry_cost,
                timeout_cost,
                success_refund,
            } => format!(
                "a retry quota (AWS SDK standard mode) of {initial}; a retry costs {retry_cost} ({timeout_cost} after a timeout), a success refunds what its last retry cost or {success_refund} without retries"
            ),
            BudgetKind::Ratio {
                percent,
                min_per_s,
                window,
            } => {
                let floor = if min_per_s > 0.0 {
                    format!(" plus {min_per_s} per second")
                } else {
                    String::new()
                };
                format!(
                    "a ratio budget: retries in the last {window} may not exceed {} % of the requests started in it{floor}",
                    100.0 * percent
                )
            }
        };
        lines.push(format!(
            "Retry budget ({}): {what}. A denied retry ends the request `budget_exhausted`.",
            scope(b.scope)
        ));
    }
    if let Some(b) = &p.breaker {
        let window = match b.window {
            BreakerWindow::Count(n) => format!("the last {n} attempts"),
            BreakerWindow::Time(d) => format!("the attempts of the last {d}"),
        };
        let slow = match b.slow_call {
            Some((d, rate)) => format!(", or {} % take longer than {d}", 100.0 * rate),
            None => String::new(),
        };
        let gate = match b.mode {
            BreakerMode::All => "An open breaker refuses every attempt",
            BreakerMode::Retries => {
                "First attempts always pass; an open (or half-open) breaker refuses retries"
            }
        };
        lines.push(format!(
            "Circuit breaker ({}): opens when {} % of {window} fail (once it has seen {}){slow}, stays open {}, then lets {} trial attempts through. {gate}, ending the request `breaker_open`.",
            scope(b.scope),
            100.0 * b.failure_rate_threshold,
            b.minimum_calls,
            b.open_duration,
            b.half_open_calls
        ));
    }
    if p.retry.max_attempts != Some(1) {
        lines.push(match &p.retry.backoff {
            Backoff::None => "Retries go out at once (no backoff).".to_string(),
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                jitter,
                ..
            } => format!(
                "Backoff from {base}, x{multiplier} per retry, capped at {cap}, {}.",
                match jitter {
                    crate::model::Jitter::None => "without jitter".to_string(),
                    j => format!("with {} jitter", j.name()),
                }
            ),
        });
    }
    lines.extend(
        repeat_words(p)
            .iter()
            .map(|part| format!("{}.", capitalized(part))),
    );
    if s.is_graph() {
        // In a call graph the policy above is the clients' towards the entry; the calls
        // between services have theirs in the graph's lines.
        let entry = format!("**{}**", escape(&s.services[0].name));
        for line in &mut lines[policy_from..] {
            let mut chars = line.chars();
            let first = chars.next().map(|c| c.to_lowercase().to_string());
            *line = format!(
                "Clients to {entry}: {}{}",
                first.unwrap_or_default(),
                chars.as_str()
            );
        }
    }
    lines
}

/// A call graph in words: who calls whom and how often, each service's server, and each
/// call's policy. The clients' own policy towards the entry follows in [`describe`].
fn graph_lines(s: &Scenario) -> Vec<String> {
    let name = |i: usize| {
        s.services
            .get(i)
            .map_or("?".to_string(), |x| format!("**{}**", escape(&x.name)))
    };
    let mut lines = Vec::new();
    let mut calls = Vec::new();
    for (i, service) in s.services.iter().enumerate() {
        if service.calls.is_empty() {
            continue;
        }
        let targets: Vec<String> = service
            .calls
            .iter()
            .map(|c| {
                if c.fraction >= 1.0 {
                    format!("{} on every attempt", name(c.to))
                } else {
                    format!("{} for {} % of requests", name(c.to), 100.0 * c.fraction)
                }
            })
            .collect();
        let how = match (service.calls.len(), service.parallel) {
            (1, _) => "",
            (_, true) => ", all at once, waiting for every answer",
            (_, false) => ", one after another, stopping at the first that fails for good",
        };
        calls.push(format!("{} calls {}{how}", name(i), join_words(&targets)));
    }
    let routes = s
        .services
        .iter()
        .flat_map(|x| &x.calls)
        .any(|c| c.fraction < 1.0);
    lines.push(format!(
        "Call graph: the clients send their requests to {}, the entry service; {}. A service answers an attempt once its own calls have ended{}.",
        name(0),
        calls.join("; "),
        if routes {
            "; a call made for a share of requests is one of its caller's routes, drawn once per request"
        } else {
            ""
        }
    ));
    for (i, service) in s.services.iter().enumerate() {
        let who = if i == 0 {
            format!("{} (entry)", name(i))
        } else {
            name(i)
        };
        let retry_after = (i == 0).then_some(s.policy.retry.retry_after);
        lines.extend(server_lines(&service.server, retry_after, Some(&who)));
    }
    for (i, service) in s.services.iter().enumerate() {
        for c in &service.calls {
            lines.push(format!(
                "Calls from {} to {}: {}.",
                name(i),
                name(c.to),
                call_policy_words(&c.policy)
            ));
        }
    }
    lines
}

/// Words joined as a sentence lists them: "a", "a and b", "a, b and c".
fn join_words(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A call's policy in one sentence: timeout, attempts and backoff, budget and breaker,
/// bulkhead, fallback and deadline.
fn call_policy_words(p: &crate::scenario::Policy) -> String {
    let mut parts = Vec::new();
    parts.push(match p.timeout {
        Some(t) => format!("attempts time out after {t}"),
        None => "no timeout".to_string(),
    });
    if let Some(d) = p.deadline {
        parts.push(format!("the call gives up {d} after it starts"));
    }
    parts.push(match p.retry.max_attempts {
        Some(1) => "no retries".to_string(),
        Some(m) => format!("up to {m} attempts"),
        None => "unlimited attempts".to_string(),
    });
    if p.retry.max_attempts != Some(1) {
        parts.push(match &p.retry.backoff {
            Backoff::None => "retries at once".to_string(),
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                jitter,
                ..
            } => format!(
                "backoff from {base}, x{multiplier} per retry, capped at {cap}, {}",
                match jitter {
                    crate::model::Jitter::None => "without jitter".to_string(),
                    j => format!("with {} jitter", j.name()),
                }
            ),
        });
    }
    if let Some(b) = &p.budget {
        let kind = match b.kind {
            BudgetKind::TokenBucket { .. } => "a token bucket",
            BudgetKind::RetryQuota { .. } => "a retry quota",
            BudgetKind::Ratio { .. } => "a ratio budget",
        };
        parts.push(format!("retries limited by {kind}"));
    }
    if p.breaker.is_some() {
        parts.push("a circuit breaker".to_string());
    }
    if let Some(b) = &p.bulkhead {
        let wait = if b.max_wait == SimDuration::ZERO {
            "an attempt beyond fails `bulkhead_full` at once".to_string()
        } else {
            format!(
                "an attempt beyond waits up to {} for a permit, then fails `bulkhead_full`",
                b.max_wait
            )
        };
        parts.push(format!(
            "a bulkhead of {} attempts in flight ({wait})",
            b.max_concurrent
        ));
    }
    if let Some(d) = &p.fallback {
        parts.push(format!(
            "a call that fails for good is answered by a fallback after {} (the request then ends degraded: neither a success nor a failure)",
            words(d)
        ));
    }
    if p.propagate_deadline {
        parts.push("the caller's remaining time caps the call's deadline".to_string());
    }
    parts.extend(repeat_words(p));
    parts.join("; ")
}

/// A policy's hedging, idempotency, idempotency keys and adaptive throttling in words, one
/// phrase each; none for a policy that sets none of them.
fn repeat_words(p: &Policy) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(h) = &p.hedge {
        let delay = match h.delay {
            HedgeDelay::Fixed(d) => d.to_string(),
            HedgeDelay::Percentile { quantile, window } => format!(
                "the {} latency of the last {window} answered attempts",
                percentile_text(quantile)
            ),
        };
        let mut text = format!(
            "hedged after {delay}, at most {} hedge{} per attempt",
            h.max_hedges,
            if h.max_hedges == 1 { "" } else { "s" }
        );
        if let Some(b) = h.budget {
            let _ = write!(text, ", hedges capped at {} % of calls", percent(b));
        }
        if h.cancel {
            text.push_str(", abandoned attempts cancelled");
        }
        parts.push(text);
    }
    if !p.idempotent {
        parts.push(
            "not idempotent: repeated executions are counted as duplicate side effects".to_string(),
        );
    }
    if let Some(k) = &p.idempotency_key {
        let answer = if k.cost == SimDuration::ZERO {
            "at once".to_string()
        } else {
            format!("in {}", k.cost)
        };
        parts.push(format!(
            "idempotency keys remembered for {}, a repeat answered {answer}",
            k.ttl
        ));
    }
    if let Some(t) = &p.adaptive_throttle {
        parts.push(format!(
            "adaptive throttling (K = {}, window {}): an attempt is rejected locally, ending its request `throttled_locally`, with probability max(0, (requests - K × accepts) / (requests + 1)) over the window",
            t.k(),
            t.window
        ));
    }
    parts
}

/// A share as a percentage with at most three decimals and no trailing zeros: 0.05 -> "5",
/// not the "5.000000000000001" that 100 * 0.05 prints.
fn percent(share: f64) -> String {
    let text = format!("{:.3}", 100.0 * share);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A server in words, one sentence per part: `who` is `None` for the one server of a
/// single-server scenario (the words it always had), else a call graph's service in bold.
/// `retry_after` is the clients' setting when they are the only callers.
fn server_lines(
    server: &Server,
    retry_after: Option<RetryAfter>,
    who: Option<&str>,
) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(match &server.kind {
        ServerKind::Queue(q) => {
            let workers = q.concurrency.map_or("unlimited workers".to_string(), |c| {
                format!("{c} worker{}", if c == 1 { "" } else { "s" })
            });
            let room = q.queue_limit.map_or("an unlimited waiting room".to_string(), |l| {
                format!("{l} waiting places")
            });
            let order = match q.discipline {
                Discipline::Fifo => String::new(),
                Discipline::Lifo => ", newest first (LIFO)".to_string(),
                Discipline::Codel { target, interval } => format!(
                    ", oldest first with CoDel shedding: once the waiting room has held attempts for {interval} without a break, an attempt that waited longer than {target} is shed when its turn comes ({interval} right after the room was empty), answered rejected like a full server's refusal"
                ),
                Discipline::AdaptiveLifo { interval } => format!(
                    ", adaptive LIFO: oldest first, newest first once the waiting room has held attempts for {interval} without a break (nothing is shed)"
                ),
            };
            let mut line = format!(
                "{}: {workers} with {room}{order}; service takes {}",
                who.map_or("Server".to_string(), |w| format!("Service {w}")),
                words(&q.service_time)
            );
            if q.slowdown_per_inflight > SimDuration::ZERO {
                let _ = write!(line, " plus {} per attempt already in service", q.slowdown_per_inflight);
            }
            if q.error_rate > 0.0 {
                let _ = write!(line, "; {} % of served attempts fail", 100.0 * q.error_rate);
            }
            if q.drop_expired {
                line.push_str("; attempts whose client gave up are dropped unserved");
            }
            line.push('.');
            line
        }
        ServerKind::Occ => format!(
            "{}: one database row written with optimistic concurrency control; a write that finds the row changed since its read conflicts.",
            who.map_or("Server".to_string(), |w| format!("Service {w}"))
        ),
    });
    if server.permanent_error_rate > 0.0 {
        lines.push(format!(
            "{}{} % of requests are bad (4xx) and never retried.",
            who.map_or(String::new(), |w| format!("At {w}, ")),
            100.0 * server.permanent_error_rate
        ));
    }
    if let Some(r) = &server.rate_limit {
        let after = match (r.retry_after, retry_after) {
            (None, _) => String::new(),
            (Some(d), Some(RetryAfter::Honor)) => {
                format!(
                    " with Retry-After {d}, which clients honour (they wait at least that long)"
                )
            }
            (Some(d), Some(RetryAfter::Ignore)) => {
                format!(" with Retry-After {d}, which clients ignore")
            }
            (Some(d), None) => format!(" with Retry-After {d}"),
        };
        lines.push(match who {
            None => format!(
                "Rate limit: the server admits {} attempts/s in bursts of up to {}; the rest are answered 429 `throttled` at once{after}.",
                r.rate_per_s, r.burst
            ),
            Some(w) => format!(
                "Rate limit at {w}: it admits {} attempts/s in bursts of up to {}; the rest are answered 429 `throttled` at once{after}.",
                r.rate_per_s, r.burst
            ),
        });
    }
    for f in server.faults.windows() {
        let effect = match f.effect {
            FaultEffect::Outage(Outage::Reject) => {
                "an outage: every attempt is answered `error` at once".to_string()
            }
            FaultEffect::Outage(Outage::Drop) => {
                "an outage: attempts vanish without an answer, so clients wait for their timeout"
                    .to_string()
            }
            FaultEffect::ErrorRate(p) => format!("{} % of served attempts fail", 100.0 * p),
            FaultEffect::ServiceTimeFactor(x) => {
                format!("service that starts in the window takes {x}x as long")
            }
            FaultEffect::Concurrency(0) => {
                "a stall: nothing new starts service, arrivals wait (or are rejected when the waiting room is full)".to_string()
            }
            FaultEffect::Concurrency(c) if who.is_some() => format!("only {c} workers"),
            FaultEffect::Concurrency(c) => format!("the server has only {c} workers"),
        };
        lines.push(format!(
            "Fault{} from {} to {}: {effect}.",
            who.map_or(String::new(), |w| format!(" at {w}")),
            f.from - SimTime::ZERO,
            f.to - SimTime::ZERO
        ));
    }
    lines
}

/// A distribution in words.
fn words(d: &Dist) -> String {
    match d {
        Dist::Constant(c) => format!("{c}"),
        Dist::Exponential { mean, .. } => format!("an exponential time with mean {mean}"),
        Dist::Uniform { min, max } => format!("between {min} and {max} (uniform)"),
        Dist::Normal { mean, sd, .. } => format!("|Normal({mean}, {sd})|"),
        Dist::LogNormal { median, sigma, .. } => {
            format!("a log-normal time with median {median} (sigma {sigma})")
        }
        Dist::Mixture { parts, .. } => {
            let parts: Vec<String> = parts
                .iter()
                .map(|(w, d)| format!("{:.0} % {}", 100.0 * w, words(d)))
                .collect();
            format!("a mixture: {}", parts.join(", "))
        }
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
        assert!(md.contains("a fallback answered 2.0 % of its requests"));
        assert!(!md.contains("\n\n\n"), "no double blank lines");
    }

    fn scenario(text: &str) -> Scenario {
        let e = crate::scenario::load_str(text, "s.json", &LoadOptions::default()).unwrap();
        e.points[0].variants[0].scenario.clone()
    }

    #[test]
    fn hedging_and_idempotency_are_described_in_words() {
        let s = scenario(
            r#"{"name": "s", "duration": "1s",
                "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}},
                "server": {"service_time": {"constant": "1ms"}},
                "policy": {"hedge": {"delay": "10ms", "budget": 0.05, "cancel": true},
                           "idempotent": false,
                           "idempotency_key": {"ttl": "24h", "cost": "1ms"}}}"#,
        );
        let lines = describe(&s);
        for line in [
            "Hedged after 10ms, at most 1 hedge per attempt, hedges capped at 5 % of calls, abandoned attempts cancelled.",
            "Not idempotent: repeated executions are counted as duplicate side effects.",
            "Idempotency keys remembered for 24h, a repeat answered in 1ms.",
        ] {
            assert!(lines.iter().any(|l| l == line), "{line} not in {lines:#?}");
        }
        assert_eq!(
            call_policy_words(&s.policy),
            "no timeout; up to 3 attempts; retries at once; hedged after 10ms, at most 1 hedge per attempt, hedges capped at 5 % of calls, abandoned attempts cancelled; not idempotent: repeated executions are counted as duplicate side effects; idempotency keys remembered for 24h, a repeat answered in 1ms"
        );
        let mut p = s.policy.clone();
        p.hedge = Some(crate::scenario::HedgeConfig {
            delay: HedgeDelay::Percentile {
                quantile: 0.999,
                window: 500,
            },
            max_hedges: 2,
            cancel: false,
            budget: None,
        });
        p.idempotent = true;
        p.idempotency_key = Some(crate::scenario::IdempotencyKey {
            ttl: SimDuration::from_secs(3600),
            cost: SimDuration::ZERO,
        });
        assert_eq!(
            repeat_words(&p),
            [
                "hedged after the p99.9 latency of the last 500 answered attempts, at most 2 hedges per attempt",
                "idempotency keys remembered for 1h, a repeat answered at once",
            ]
        );
        assert_eq!(percent(0.05), "5");
        assert_eq!(percent(0.125), "12.5");
        assert_eq!(percent(1.0), "100");
    }

    #[test]
    fn a_policy_without_hedges_or_keys_has_no_words_for_them() {
        let s = scenario(
            r#"{"name": "s", "duration": "1s",
                "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}},
                "server": {"service_time": {"constant": "1ms"}},
                "policy": {"idempotency_key": false, "idempotent": true}}"#,
        );
        assert!(repeat_words(&s.policy).is_empty());
        let lines = describe(&s).join("\n");
        assert!(
            !lines.contains("edged") && !lines.contains("dempoten"),
            "{lines}"
        );
    }
}
