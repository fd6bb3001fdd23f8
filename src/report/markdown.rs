//! `report.md`: a page a team can paste into a design review. What the scenario models in
//! words, the results with their 95 % intervals, findings written as sentences computed from
//! the numbers, and every figure with a caption saying what to look at.

use std::fmt::Write as _;

use serde_json::Value;

use super::metric;
use crate::engine::{SimDuration, SimTime};
use crate::model::{
    Backoff, BreakerMode, BreakerWindow, BudgetKind, Discipline, Dist, FaultEffect, Outage,
    Outcome, Scope,
};
use crate::runner::{ExperimentResult, VariantResult};
use crate::scenario::{Experiment, RetryAfter, Scenario, ServerKind, Workload};

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
    let _ = writeln!(out, "# {}\n", experiment.name);
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
        let values: Vec<String> = s.values.iter().map(Value::to_string).collect();
        let value = point.value.as_ref().map_or(String::new(), Value::to_string);
        match (&s.second, &experiment.points[focus].second_value) {
            (Some(second), Some(y)) => {
                let seconds: Vec<String> = second.values.iter().map(Value::to_string).collect();
                let _ = writeln!(
                    out,
                    "- Every variant runs at every pair of a value of `{}` ({}) and a value of `{}` ({}): {} points. Results below are at `{}` = {value}, `{}` = {y}.",
                    s.path,
                    values.join(", "),
                    second.path,
                    seconds.join(", "),
                    experiment.points.len(),
                    s.path,
                    second.path,
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "- Every variant runs at every value of `{}`: {}. Results below are at `{}` = {value}.",
                    s.path,
                    values.join(", "),
                    s.path,
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
            let _ = writeln!(out, "- **{}**: as above.", v.name);
        } else {
            let _ = writeln!(out, "- **{}**: {}", v.name, differs.join(" "));
        }
    }

    let _ = writeln!(out, "\n## Results\n");
    if reps > 1 {
        let _ = writeln!(
            out,
            "Means over {reps} replications, ± the 95 % confidence half-width.\n"
        );
    }
    results_table(&mut out, &point.variants, reps > 1);

    let _ = writeln!(out, "\n## Findings\n");
    for f in findings(&point.variants) {
        let _ = writeln!(out, "- {f}");
    }
    recovery_section(&mut out, &scenarios, &point.variants);
    every_pair(&mut out, experiment, result);

    if !figures.is_empty() {
        let _ = writeln!(out, "\n## Figures\n");
        for f in figures {
            let _ = writeln!(out, "![{}]({})\n\n*{}*\n", f.caption, f.file, f.caption);
        }
    }
    let _ = writeln!(
        out,
        "---\nMade by retrystorm {} from `summary.json` in this folder; every figure has its data beside it as CSV.",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn results_table(out: &mut String, variants: &[VariantResult], with_ci: bool) {
    const COLS: [(&str, &str, f64, usize); 8] = [
        ("requests", "requests", 1.0, 0),
        ("success %", "success_rate", 100.0, 1),
        ("attempts", "attempts", 1.0, 0),
        ("amplification", "amplification", 1.0, 2),
        ("p50 ms", "latency_ms.p50", 1.0, 1),
        ("p99 ms", "latency_ms.p99", 1.0, 1),
        ("completion s", "makespan_ms", 1e-3, 2),
        ("wasted", "server.wasted", 1.0, 0),
    ];
    // Retry budget and breaker columns, when some variant has one.
    const POLICY: [(&str, &str, f64, usize); 3] = [
        ("budget denials", "budget_denials", 1.0, 0),
        ("breaker refusals", "breaker.refusals", 1.0, 0),
        ("breaker open %", "breaker.open_fraction", 100.0, 1),
    ];
    let cols: Vec<(&str, &str, f64, usize)> = COLS
        .into_iter()
        .chain(
            POLICY
                .into_iter()
                .filter(|(_, path, ..)| variants.iter().any(|v| metric(&v.metrics, path) != 0.0)),
        )
        .collect();
    let _ = write!(out, "| variant |");
    for (h, ..) in &cols {
        let _ = write!(out, " {h} |");
    }
    let _ = write!(out, "\n|---|");
    for _ in &cols {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out);
    for v in variants {
        let _ = write!(out, "| {} |", v.name);
        for &(_, path, scale, d) in &cols {
            let m = metric(&v.metrics, path) * scale;
            if with_ci {
                let h = metric(&v.ci95, path) * scale;
                let _ = write!(out, " {m:.d$} ± {h:.d$} |");
            } else {
                let _ = write!(out, " {m:.d$} |");
            }
        }
        let _ = writeln!(out);
    }
}

/// Whether two estimates' 95 % intervals are apart.
fn apart(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).abs() > a.1 + b.1
}

/// Sentences computed from the numbers.
pub fn findings(variants: &[VariantResult]) -> Vec<String> {
    let mut out = Vec::new();
    let est = |v: &VariantResult, path: &str| (metric(&v.metrics, path), metric(&v.ci95, path));
    // The variants with the lowest and the highest value of `path`; among variants whose
    // mean lies within the extreme's interval, the first in file order (usually the
    // baseline), so that a tie names the variant readers compare against.
    let by = |path: &str| -> (usize, usize) {
        let values: Vec<f64> = variants.iter().map(|v| metric(&v.metrics, path)).collect();
        let lo = (0..values.len())
            .min_by(|a, b| values[*a].total_cmp(&values[*b]))
            .unwrap_or(0);
        let hi = (0..values.len())
            .max_by(|a, b| values[*a].total_cmp(&values[*b]))
            .unwrap_or(0);
        let first_like = |extreme: usize| {
            let e = est(&variants[extreme], path);
            (0..values.len())
                .find(|&i| {
                    let x = est(&variants[i], path);
                    (x.0 - e.0).abs() <= e.1.max(1e-9 * e.0.abs())
                })
                .unwrap_or(extreme)
        };
        (first_like(lo), first_like(hi))
    };
    if variants.len() > 1 {
        let (lo, hi) = by("attempts");
        let (a, b) = (
            est(&variants[lo], "attempts"),
            est(&variants[hi], "attempts"),
        );
        if apart(a, b) && b.0 > 0.0 {
            out.push(format!(
                "**{}** sends {:.0} % fewer attempts to the server than **{}** ({:.0} against {:.0}).",
                variants[lo].name,
                100.0 * (1.0 - a.0 / b.0),
                variants[hi].name,
                a.0,
                b.0
            ));
        } else {
            out.push("Every variant puts about the same work on the server (the 95 % intervals overlap).".into());
        }
        let (lo, hi) = by("success_rate");
        let (a, b) = (
            est(&variants[lo], "success_rate"),
            est(&variants[hi], "success_rate"),
        );
        if apart(a, b) {
            // Named with the best only when its own mean lies inside the best's interval: a
            // bimodal variant's wide interval overlaps everything but its mean is no match.
            let best: Vec<String> = variants
                .iter()
                .filter(|v| {
                    let e = est(v, "success_rate");
                    !apart(e, b) && b.0 - e.0 <= b.1.max(1e-9)
                })
                .map(|v| format!("**{}**", v.name))
                .collect();
            let (verb, names) = match best.as_slice() {
                [one] => ("succeeds", one.clone()),
                [init @ .., last] => ("succeed", format!("{} and {last}", init.join(", "))),
                [] => ("succeeds", String::new()),
            };
            out.push(format!(
                "{names} {verb} for {:.1} % of requests, **{}** for only {:.1} %.",
                100.0 * b.0,
                variants[lo].name,
                100.0 * a.0
            ));
        }
        let (lo, hi) = by("latency_ms.p99");
        let (a, b) = (
            est(&variants[lo], "latency_ms.p99"),
            est(&variants[hi], "latency_ms.p99"),
        );
        if apart(a, b) && b.0 > 0.0 {
            let ratio = if a.0 >= 1.0 {
                format!(" ({:.1}x)", b.0 / a.0)
            } else {
                String::new()
            };
            out.push(format!(
                "The slowest 1 % of requests take up to {:.0} ms with **{}** and {:.0} ms with **{}**{ratio}.",
                b.0, variants[hi].name, a.0, variants[lo].name
            ));
        }
        let (lo, hi) = by("makespan_ms");
        let (a, b) = (
            est(&variants[lo], "makespan_ms"),
            est(&variants[hi], "makespan_ms"),
        );
        if apart(a, b) {
            out.push(format!(
                "The last request ends after {} with **{}** and after {} with **{}**.",
                seconds(b.0),
                variants[hi].name,
                seconds(a.0),
                variants[lo].name
            ));
        }
    }
    if let Some(v) = variants.iter().max_by(|a, b| {
        metric(&a.metrics, "amplification").total_cmp(&metric(&b.metrics, "amplification"))
    }) {
        let amp = metric(&v.metrics, "amplification");
        if amp >= 1.5 {
            // Every variant whose mean lies within the top one's interval shares the sentence
            // (a bimodal variant's wide interval does not make it a match).
            let top = est(v, "amplification");
            let names: Vec<String> = variants
                .iter()
                .filter(|w| {
                    let x = est(w, "amplification");
                    top.0 - x.0 <= top.1.max(5e-3)
                })
                .map(|w| format!("**{}**", w.name))
                .collect();
            let (who, verb) = match names.as_slice() {
                [one] => (one.clone(), "amplifies"),
                [init @ .., last] => (format!("{} and {last}", init.join(", ")), "amplify"),
                [] => (format!("**{}**", v.name), "amplifies"),
            };
            out.push(format!(
                "{who} {verb} the load most, {amp:.2}x: each logical request reaches the server {amp:.2} times on average."
            ));
        }
    }
    for v in variants {
        let requests = metric(&v.metrics, "requests");
        let failed: Vec<(Outcome, f64)> = Outcome::FAILURES
            .iter()
            .map(|o| (*o, metric(&v.metrics, &format!("failed.{}", o.name()))))
            .filter(|(_, n)| *n > 0.0)
            .collect();
        let total: f64 = failed.iter().map(|(_, n)| n).sum();
        if let Some((o, n)) = failed.iter().max_by(|a, b| a.1.total_cmp(&b.1))
            && requests > 0.0
            && total / requests >= 0.01
        {
            out.push(format!(
                "**{}** fails {:.1} % of requests, mostly with `{}` ({:.0} % of its failures).",
                v.name,
                100.0 * total / requests,
                o.name(),
                100.0 * n / total
            ));
        }
        let wasted = metric(&v.metrics, "server.wasted");
        let served = metric(&v.metrics, "server.served");
        if served > 0.0 && wasted / served >= 0.01 {
            out.push(format!(
                "**{}** wastes {:.0} % of the server's work on attempts whose client had already given up.",
                v.name,
                100.0 * wasted / served
            ));
        }
        let denials = metric(&v.metrics, "budget_denials");
        if denials > 0.0 && requests > 0.0 {
            out.push(format!(
                "**{}**'s retry budget denied {:.0} retries: {:.1} % of requests ended `budget_exhausted` instead of retrying.",
                v.name,
                denials,
                100.0 * denials / requests
            ));
        }
        let refusals = metric(&v.metrics, "breaker.refusals");
        if refusals > 0.0 {
            out.push(format!(
                "**{}**'s circuit breakers were open {:.1} % of the time and refused {:.0} attempts, which never reached the server.",
                v.name,
                100.0 * metric(&v.metrics, "breaker.open_fraction"),
                refusals
            ));
        }
        let truncated = metric(&v.metrics, "truncated");
        if truncated > 0.0 {
            out.push(format!(
                "**{}** hit a limit and stopped early in {:.0} % of replications: its numbers cover only what finished.",
                v.name,
                100.0 * truncated
            ));
        }
    }
    out
}

/// The "Recovery" section: for each variant, in words, the goodput before the trigger, the
/// trigger windows, and whether and when it recovered (from the `recovery` metrics, which
/// count replications rather than average them). Nothing without triggers.
fn recovery_section(out: &mut String, scenarios: &[&Scenario], variants: &[VariantResult]) {
    if !variants.iter().any(|v| v.metrics.get("recovery").is_some()) {
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
        ". A replication has recovered at time t after the last trigger ends when its goodput (requests that succeeded per second) over [t, t + 5 s) is back to at least 90 % of its level before the first trigger, and its mean from t to the end of the run is too; the drain after new requests stop does not count. A replication that never gets there is metastable: the trigger is gone, the overload is not.\n"
    );
    for (v, s) in variants.iter().zip(scenarios) {
        let r = v.metrics.get("recovery");
        let get = |key: &str| r.and_then(|r| r.get(key)).and_then(Value::as_f64);
        let (Some(n), Some(k)) = (get("replications"), get("recovered")) else {
            let _ = writeln!(
                out,
                "- **{}**: no recovery analysis (no trigger, or no time before it to measure goodput).",
                v.name
            );
            continue;
        };
        let mut line = format!("- **{}**: ", v.name);
        if !shared {
            let _ = write!(line, "triggers {}; ", windows(s));
        }
        let _ = write!(
            line,
            "before the trigger it completed {:.1} requests/s. ",
            get("baseline_per_s").unwrap_or(0.0)
        );
        let median = get("median_recovery_s").unwrap_or(0.0);
        let reps = |x: f64| format!("{x:.0} replication{}", if x == 1.0 { "" } else { "s" });
        if k == 0.0 {
            let any = if n == 1.0 {
                String::new()
            } else {
                format!(" in any of its {}", reps(n))
            };
            let _ = write!(
                line,
                "Metastable: it did not recover by the end of the run{any}."
            );
        } else if k == n {
            let spread = match get("p90_recovery_s") {
                Some(p90) if n >= 10.0 && p90 > median => {
                    format!(" (90 % within {p90:.1} s)")
                }
                _ => String::new(),
            };
            let _ = write!(
                line,
                "It recovered in {}{}, median {median:.1} s after the trigger ended{spread}.",
                if n == 1.0 { "its " } else { "all " },
                reps(n)
            );
        } else {
            let _ = write!(
                line,
                "{k:.0} of {} ({:.0} %) recovered (median {median:.1} s after the trigger ended); the others stayed collapsed to the end: an average of the two would describe no run.",
                reps(n),
                100.0 * k / n
            );
        }
        let peak = get("peak_amplification").unwrap_or(0.0);
        let wasted = get("wasted_fraction").unwrap_or(0.0);
        let _ = write!(
            line,
            " From the trigger until {}, the load peaked at {peak:.2} attempts per first attempt (the worst 5 s, mean over replications) and {:.0} % of the server's work was wasted on attempts whose client had given up.",
            if k == n {
                "it recovered"
            } else if k == 0.0 {
                "the end of the run"
            } else {
                "recovery (or the end of the run)"
            },
            100.0 * wasted
        );
        let _ = writeln!(out, "{line}");
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
        "{} (`{}`, in %) for each value of `{}` (columns) and of `{}` (rows, its last value on top, as in the phase diagram).",
        capitalized(m.words),
        m.path,
        s.path,
        second.path
    );
    let header: Vec<String> = s
        .values
        .iter()
        .map(|v| super::value_text(Some(v)))
        .collect();
    for (k, v) in result.points[0].variants.iter().enumerate() {
        let _ = writeln!(out, "\n**{}**\n", v.name);
        let _ = writeln!(
            out,
            "| {} \\ {} | {} |",
            second.path,
            s.path,
            header.join(" | ")
        );
        let _ = writeln!(out, "|---|{}", "---:|".repeat(header.len()));
        for (j, y) in second.values.iter().enumerate().rev() {
            let cells: Vec<String> = (0..s.values.len())
                .map(|i| {
                    let at = &result.points[s.point_index(i, j)].variants[k];
                    format!("{:.1}", 100.0 * metric(&at.metrics, m.path))
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} |",
                super::value_text(Some(y)),
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
    lines.push(match &s.server.kind {
        ServerKind::Queue(q) => {
            let workers = q.concurrency.map_or("unlimited workers".to_string(), |c| {
                format!("{c} worker{}", if c == 1 { "" } else { "s" })
            });
            let room = q.queue_limit.map_or("an unlimited waiting room".to_string(), |l| {
                format!("{l} waiting places")
            });
            let order = match q.discipline {
                Discipline::Fifo => "",
                Discipline::Lifo => ", newest first (LIFO)",
            };
            let mut line = format!(
                "Server: {workers} with {room}{order}; service takes {}",
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
        ServerKind::Occ => "Server: one database row written with optimistic concurrency control; a write that finds the row changed since its read conflicts.".to_string(),
    });
    if s.server.permanent_error_rate > 0.0 {
        lines.push(format!(
            "{} % of requests are bad (4xx) and never retried.",
            100.0 * s.server.permanent_error_rate
        ));
    }
    if let Some(r) = &s.server.rate_limit {
        let after = match (r.retry_after, s.policy.retry.retry_after) {
            (None, _) => String::new(),
            (Some(d), RetryAfter::Honor) => {
                format!(
                    " with Retry-After {d}, which clients honour (they wait at least that long)"
                )
            }
            (Some(d), RetryAfter::Ignore) => {
                format!(" with Retry-After {d}, which clients ignore")
            }
        };
        lines.push(format!(
            "Rate limit: the server admits {} attempts/s in bursts of up to {}; the rest are answered 429 `throttled` at once{after}.",
            r.rate_per_s, r.burst
        ));
    }
    for f in s.server.faults.windows() {
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
            FaultEffect::Concurrency(c) => format!("the server has only {c} workers"),
        };
        lines.push(format!(
            "Fault from {} to {}: {effect}.",
            f.from - SimTime::ZERO,
            f.to - SimTime::ZERO
        ));
    }
    let p = &s.policy;
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
            } => format!(
                "Backoff from {base}, x{multiplier} per retry, capped at {cap}, {}.",
                match jitter {
                    crate::model::Jitter::None => "without jitter".to_string(),
                    j => format!("with {} jitter", j.name()),
                }
            ),
        });
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
