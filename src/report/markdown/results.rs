//! The "Results" tables of report.md: a row per variant with the headline numbers, tables
//! per service and per call where there are calls below the entry, and theory beside
//! simulation where a closed form describes a variant exactly.

use std::fmt::Write as _;

use super::compare::RELATIVE;
use super::escape;
use crate::metrics::VariantResult;
use crate::metrics::{GroupMetric, Latency, Metric, ServiceMetric, Unit};
use crate::report::{shape, table};
use crate::scenario::{Scenario, Variant};

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

/// The results table: a row per variant, `-` where its scenario cannot produce a count.
pub(super) fn results_table(
    out: &mut String,
    variants: &[VariantResult],
    scenarios: &[&Scenario],
    with_ci: bool,
) {
    // The server's own end, when it went on serving well after the last request ended (work
    // its clients had abandoned): completion time alone would hide that drain.
    let drains = variants.iter().any(|v| {
        v.metrics.entry().busy_until_ms > (1.0 + RELATIVE) * v.metrics.makespan_ms.max(1.0)
    });
    // Hedging is a policy for the far tail ("The Tail at Scale" measures p99.9): where a
    // variant hedges, p99.9 stands beside p99.
    let hedged = scenarios
        .iter()
        .any(|s| crate::report::produces(&Metric::HEDGES, s));
    // A pool of replicas: the balancers' closed forms (M/M/1 per replica for random routing,
    // Mitzenmacher's limit for two choices) are means, so the mean stands before p50.
    let pooled = shape::any_has_replicas(scenarios.iter().copied());
    let cols: Vec<Metric> = RESULT_COLUMNS
        .into_iter()
        .flat_map(|k| {
            let tail = hedged && k == Metric::SUCCESS_P99;
            let mean = pooled && k == Metric::SUCCESS_P50;
            (mean.then_some(Metric::SUCCESS_MEAN).into_iter())
                .chain(std::iter::once(k))
                .chain(tail.then_some(Metric::SUCCESS_P999))
        })
        .chain(drains.then_some(Metric::BUSY_UNTIL))
        .chain(
            OPTIONAL_COLUMNS
                .into_iter()
                .filter(|k| variants.iter().any(|v| k.value(&v.metrics) != 0.0)),
        )
        .collect();
    // Where a request can be answered degraded, a fallback's answer counts with the successes
    // in latency, and the share of such answers stands right after the success share.
    let can_degrade = shape::any_can_degrade(scenarios.iter().copied());
    let degraded = |k: &Metric| can_degrade && *k == Metric::SUCCESS_RATE;
    let mut titles = Vec::new();
    for k in &cols {
        titles.push(crate::report::charts::metric_title(k, can_degrade));
        if degraded(k) {
            titles.push("degraded (%)".to_string());
        }
    }
    let rows = variants.iter().zip(scenarios).map(|(v, sc)| {
        let mut cells = Vec::new();
        for k in &cols {
            cells.push(if crate::report::produces(k, sc) {
                k.format_estimate(&v.metrics, &v.ci95, with_ci)
            } else {
                "-".to_string()
            });
            if degraded(k) {
                cells.push(table::degraded_cell(v, sc, with_ci));
            }
        }
        (shown(v), cells)
    });
    markdown_table(out, "variant", &titles, rows);
}

/// A variant's name as a table's first cell shows it, marked when it was truncated.
fn shown(v: &VariantResult) -> String {
    format!("{}{}", escape(&v.name), mark(v))
}

/// The mark after the name of a variant that was truncated.
fn mark(v: &VariantResult) -> &'static str {
    if v.is_truncated() { " (truncated)" } else { "" }
}

/// A Markdown table: `corner` heads the first column and `titles` the others, which are
/// right-aligned; each row is its first cell and the others.
pub(super) fn markdown_table(
    out: &mut String,
    corner: &str,
    titles: &[String],
    rows: impl IntoIterator<Item = (String, Vec<String>)>,
) {
    let _ = write!(out, "| {corner} |");
    for t in titles {
        let _ = write!(out, " {t} |");
    }
    let _ = writeln!(out, "\n|---|{}", "---:|".repeat(titles.len()));
    for (first, cells) in rows {
        let _ = write!(out, "| {first} |");
        for c in &cells {
            let _ = write!(out, " {c} |");
        }
        let _ = writeln!(out);
    }
}

/// The "Per service" and "Per call" tables, one of each per variant with calls below the
/// entry, at the point the results are at.
pub(super) fn service_and_call_tables(
    out: &mut String,
    ran: &[Variant],
    variants: &[VariantResult],
    with_ci: bool,
) {
    let pairs: Vec<(&VariantResult, &Variant)> = variants
        .iter()
        .zip(ran)
        .filter(|(_, r)| shape::has_calls(&r.scenario))
        .collect();
    let cols = table::service_columns(&pairs);
    let titles: Vec<String> = cols.iter().map(|k| k.title()).collect();
    let _ = writeln!(out, "\n### Per service\n");
    let _ = writeln!(
        out,
        "What reached each service, retries from its callers included. Attempts per request divides them by the logical requests the clients started, so a service behind a caller that retries sees more than 1 even when the clients never retry. Utilization counts a worker busy while it waits for its service's own calls; goodput is the successful answers to callers still waiting, per second."
    );
    for (v, r) in &pairs {
        let _ = writeln!(out, "\n**{}**{}\n", escape(&v.name), mark(v));
        let rows = table::service_rows(v, r, &cols, with_ci);
        let rows = rows.into_iter().enumerate().map(|(i, (name, cells))| {
            let entry = if i == 0 { " (entry)" } else { "" };
            (format!("{}{entry}", escape(name)), cells)
        });
        markdown_table(out, "service", &titles, rows);
    }
    if pairs.iter().all(|(v, _)| v.metrics.calls.is_empty()) {
        return;
    }
    let calls = || pairs.iter().flat_map(|(v, _)| &v.metrics.calls);
    let cols = table::call_columns(calls());
    let _ = writeln!(out, "\n### Per call\n");
    let _ = writeln!(
        out,
        "Attempts per request counts the attempts sent on a call per logical request the clients started. Failed counts the calls that failed for good; degraded those of them a fallback answered; bulkhead full the attempts a full bulkhead refused."
    );
    let routes = table::has_routes(calls());
    if routes {
        let _ = writeln!(
            out,
            "Route success is, for a call of the entry service that only part of the requests make, the share of the requests on that route that succeeded in full, whether or not they reached the call (`-` for other calls)."
        );
    }
    let mut titles: Vec<String> = cols.iter().map(|k| k.title()).collect();
    if routes {
        titles.push("route success (%)".to_string());
    }
    for (v, r) in &pairs {
        let _ = writeln!(out, "\n**{}**{}\n", escape(&v.name), mark(v));
        let rows = table::call_rows(v, r, &cols, routes, with_ci).into_iter();
        let rows =
            rows.map(|((from, to), cells)| (format!("{} → {}", escape(&from), escape(&to)), cells));
        markdown_table(out, "call", &titles, rows);
    }
}

/// The "Per replica" tables: one per variant with a service of more than one replica, a row
/// per replica of each such service, at the point the results are at. Nothing without
/// replicas.
pub(crate) fn replica_tables(
    out: &mut String,
    ran: &[Variant],
    variants: &[VariantResult],
    with_ci: bool,
) {
    let pairs: Vec<(&VariantResult, &Variant)> = variants
        .iter()
        .zip(ran)
        .filter(|(v, _)| !v.metrics.replicas.is_empty())
        .collect();
    if pairs.is_empty() {
        return;
    }
    let cols = table::replica_columns(&pairs);
    let titles: Vec<String> = cols.iter().map(|k| k.title()).collect();
    let _ = writeln!(
        out,
        "
### Per replica
"
    );
    let _ = writeln!(
        out,
        "What reached each replica of a service that runs more than one, numbered from 0: each has its own workers and waiting room, and its callers' balancer spreads their attempts, retries included, over them. A service's row in the other tables adds its replicas up."
    );
    if cols.iter().any(|k| k.key == ServiceMetric::EJECTIONS.key) {
        let _ = writeln!(
            out,
            "\n*ejections* counts the times a caller's outlier detector took the replica out of its balancer, *time ejected* the seconds it stayed out, every caller's added up (the clients are one caller)."
        );
    }
    for (v, r) in &pairs {
        let _ = writeln!(out, "\n**{}**{}\n", escape(&v.name), mark(v));
        let rows = table::replica_rows(v, r, &cols, with_ci);
        let rows = rows
            .into_iter()
            .map(|((name, k), cells)| (format!("{} #{k}", escape(name)), cells));
        markdown_table(out, "replica", &titles, rows);
    }
}

/// The "Per group of clients" tables: one per variant whose clients form more than one
/// group, a row per group, at the point the results are at. Nothing for a single group,
/// whose numbers are the totals above.
pub(crate) fn group_tables(
    out: &mut String,
    ran: &[Variant],
    variants: &[VariantResult],
    with_ci: bool,
) {
    let pairs: Vec<(&VariantResult, &Variant)> = variants
        .iter()
        .zip(ran)
        .filter(|(v, _)| !v.metrics.groups.is_empty())
        .collect();
    if pairs.is_empty() {
        return;
    }
    let mut titles: Vec<String> = GroupMetric::ALL.iter().map(|k| k.title()).collect();
    titles.extend(["mean (ms)", "p50 (ms)", "p99 (ms)"].map(String::from));
    let _ = writeln!(out, "\n### Per group of clients\n");
    let _ = writeln!(
        out,
        "Each group's own requests: the share of those that ended that succeeded, the attempts each made (first attempts and retries), and the latency of those answered, pooled over the replications as the totals' is. Each group calls with its own policy where it has one, else the top-level one; the totals above are over every group."
    );
    for (v, r) in &pairs {
        let _ = writeln!(out, "\n**{}**{}\n", escape(&v.name), mark(v));
        let rows = v
            .metrics
            .groups
            .iter()
            .zip(&v.ci95.groups)
            .zip(&r.scenario.clients)
            .map(|((mean, half), group)| {
                let mut cells: Vec<String> = GroupMetric::ALL
                    .iter()
                    .map(|k| k.format_estimate(mean, half, with_ci))
                    .collect();
                let latency = |f: fn(&Latency) -> f64| match (mean.latency_ms, half.latency_ms) {
                    (Some(m), Some(h)) => Unit::Millis.estimate_text(1, (f(&m), f(&h)), with_ci),
                    _ => "-".to_string(),
                };
                cells.extend([latency(|l| l.mean), latency(|l| l.p50), latency(|l| l.p99)]);
                (escape(&group.name), cells)
            });
        markdown_table(out, "group", &titles, rows);
    }
}

/// Theory beside simulation, for the variants a closed form describes exactly.
pub(super) fn theory_section(
    out: &mut String,
    scenarios: &[&Scenario],
    variants: &[VariantResult],
) {
    let rows = crate::report::theory::checks(scenarios.iter().copied(), variants);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Theory beside simulation\n");
    let _ = writeln!(
        out,
        "Where a closed form describes a variant exactly, its prediction sits beside the simulated mean and 95 % interval (drawn in theory.png).\n"
    );
    let _ = writeln!(
        out,
        "| variant | quantity | formula | theory | simulated | inside the interval |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|:---:|");
    let total = rows.len();
    let outside = rows.iter().filter(|c| !c.inside()).count();
    for c in &rows {
        let (v, p) = (c.result, &c.prediction);
        let k = p.metric;
        let d = k.decimals + 1;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.d$} | {} | {} |",
            escape(&v.name),
            k.title(),
            p.formula,
            p.value * k.scale,
            k.format_estimate(&v.metrics, &v.ci95, true),
            if c.inside() { "yes" } else { "no" }
        );
    }
    let _ = writeln!(out, "\n{}", chance_note(total, outside));
}

/// What a reader should expect of the "inside the interval" column: a 95 % interval leaves
/// the true value outside about once in 20 by chance, so of `rows` rows about 5 % read "no"
/// when simulation and theory agree; `outside` is how many do.
pub(super) fn chance_note(rows: usize, outside: usize) -> String {
    let expected = rows as f64 * 0.05;
    let expected = if expected < 0.5 {
        "fewer than one".to_string()
    } else {
        format!("about {}", expected.round())
    };
    let rows_words = if rows == 1 { "row" } else { "rows" };
    let seen = match outside {
        0 => "none here does".to_string(),
        1 => "1 here does".to_string(),
        n => format!("{n} here do"),
    };
    // The chance that at least one row reads "no" by chance alone.
    let some = 100.0 * (1.0 - 0.95f64.powi(rows as i32));
    format!(
        "A 95 % interval leaves the true value outside about once in 20 by chance, so of these {rows} {rows_words} {expected} is expected to read \"no\" even where simulation and theory agree (about 5 % of rows; the chance that at least one does is {some:.0} %); {seen}. A \"no\" is disagreement only when it is far outside its interval, or when it comes back with other seeds."
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::variant;
    use super::*;

    /// tail-at-scale's headline, p99.9 from a second to 16-18 ms, was only in summary.json.
    #[test]
    fn a_run_with_hedging_shows_p999_beside_p99() {
        let text = r#"{"name": "h", "duration": "1s",
            "clients": {"count": 5, "workload": {"open": {"rate_per_s": 100}}},
            "server": {"concurrency": 8, "service_time": {"constant": "5ms"}},
            "policy": {"timeout": "1s"},
            "variants": [{"name": "plain", "patch": {}},
                         {"name": "hedged", "patch": {"policy": {"hedge": {"delay": "10ms"}}}}]}"#;
        let e = crate::scenario::load_str(text, "h.json", &Default::default()).unwrap();
        let scenarios: Vec<&Scenario> = e.points[0].variants.iter().map(|v| &v.scenario).collect();
        let p999 = |ms: f64| move |m: &mut crate::metrics::Metrics| m.success_latency_ms.p999 = ms;
        let vs = [
            variant("plain", p999(1001.0)),
            variant("hedged", p999(17.8)),
        ];
        let header = |scenarios: &[&Scenario]| {
            let mut out = String::new();
            results_table(&mut out, &vs, scenarios, false);
            out.lines().next().unwrap_or_default().to_string()
        };
        let with = header(&scenarios);
        assert!(
            with.contains("| p99 success latency (ms) | p99.9 success latency (ms) |"),
            "{with}"
        );
        assert!(
            !header(&scenarios[..1]).contains("p99.9"),
            "no hedging, no p99.9"
        );
    }

    /// brooker-2022 has one "no" in 19 rows: what 95 % intervals predict, and the report says so.
    #[test]
    fn the_theory_table_says_how_many_rows_fall_outside_by_chance() {
        let note = chance_note(19, 1);
        assert!(
            note.contains("of these 19 rows about 1 is expected to read \"no\""),
            "{note}"
        );
        assert!(note.contains("about 5 % of rows"), "{note}");
        assert!(note.contains("at least one does is 62 %"), "{note}");
        assert!(note.contains("1 here does"), "{note}");
        assert!(chance_note(4, 0).contains("fewer than one is expected"));
        assert!(chance_note(4, 0).contains("none here does"));
        assert!(chance_note(60, 2).contains("about 3 is expected"));
    }
}
