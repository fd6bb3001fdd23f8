//! The terminal table: a row per variant (and sweep value) with the headline numbers. A run
//! whose requests can be answered degraded adds the share a fallback answered beside the
//! success share; a run with calls below the entry adds a table per service and per call (at
//! the sweep's focus value).

use std::fmt::Write as _;

use crate::metrics::{CallMetric, Metric, Metrics, PartMetric, ServiceMetric, Unit};
use crate::metrics::{ExperimentResult, VariantResult};
use crate::report::shape;
use crate::scenario::{Experiment, Scenario, Variant};

/// The headline columns, each a header and its metric (printed with the metric's scale and
/// decimals). Latency is the latency of successful requests; the failure share is beside the
/// success share.
const COLS: [(&str, Metric); 8] = [
    ("requests", Metric::REQUESTS),
    ("success %", Metric::SUCCESS_RATE),
    ("failed %", Metric::FAILURE_RATE),
    ("attempts", Metric::ATTEMPTS),
    ("amplification", Metric::AMPLIFICATION),
    ("success p50 ms", Metric::SUCCESS_P50),
    ("success p99 ms", Metric::SUCCESS_P99),
    ("completion time s", Metric::COMPLETION),
];

/// Columns shown only when some variant has a non-zero value: the retry budget, circuit
/// breaker, hedging and idempotency counts, which are zero for every variant without one.
const POLICY_COLS: [(&str, Metric); 12] = [
    ("budget denials", Metric::BUDGET_DENIALS),
    ("breaker refusals", Metric::BREAKER_REFUSALS),
    ("breaker transitions", Metric::BREAKER_TRANSITIONS),
    ("open %", Metric::BREAKER_OPEN),
    ("hedges", Metric::HEDGES),
    ("hedge wins", Metric::HEDGE_WINS),
    ("cancelled", Metric::CANCELLED),
    ("shed", Metric::SHED),
    ("duplicates", Metric::DUPLICATES),
    ("dup. requests", Metric::DUPLICATE_CALLS),
    ("replayed", Metric::REPLAYED),
    ("throttled locally", Metric::FAILED_THROTTLED_LOCALLY),
];

/// The cell of the per-call count `k` of `call`: `-` where the call cannot produce it.
pub(super) fn call_cell(
    k: &CallMetric,
    call: Option<&crate::scenario::Call>,
    (m, h): (&crate::metrics::CallMetrics, &crate::metrics::CallMetrics),
    with_ci: bool,
) -> String {
    if call.is_none_or(|c| !super::call_produces(k, c)) {
        return "-".to_string();
    }
    k.format_estimate(m, h, with_ci)
}

/// Whether `text` holds an interval cut at a bound ([`Unit::estimate_text`]): a digit, ` [`,
/// a digit.
pub(super) fn has_cut(text: &str) -> bool {
    let digit = |b: u8| b.is_ascii_digit();
    (text.as_bytes().windows(4)).any(|w| digit(w[0]) && &w[1..3] == b" [" && digit(w[3]))
}

/// The calls of `variant` in the order of its per-call metrics.
pub(super) fn calls_of(variant: &Variant) -> Vec<&crate::scenario::Call> {
    variant
        .scenario
        .services
        .iter()
        .flat_map(|s| &s.calls)
        .collect()
}

/// Renders the table of a finished run.
pub fn table(experiment: &Experiment, result: &ExperimentResult) -> String {
    let with_ci = experiment.replications > 1;
    let columns = Columns::new(experiment, result);
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (point, at) in result.points.iter().zip(&experiment.points) {
        for (v, ran) in point.variants.iter().zip(&at.variants) {
            let mut row = Vec::new();
            if point.value.is_some() {
                row.push(super::value_text(point.value.as_ref()));
            }
            if columns.second {
                row.push(super::value_text(at.second_value.as_ref()));
            }
            row.push(shown(v));
            row.extend(columns.cells(v, ran, with_ci));
            rows.push(row);
        }
    }
    let mut out = String::new();
    let reps = experiment.replications;
    let _ = writeln!(
        out,
        "{}: seed {}, {} replication{}{}",
        experiment.name,
        experiment.seed,
        reps,
        if reps == 1 { "" } else { "s" },
        if with_ci {
            " (mean ± 95 % half-width)"
        } else {
            ""
        }
    );
    let header = columns.header(experiment);
    let text_cols = 1 + usize::from(experiment.sweep.is_some()) + usize::from(columns.second);
    // Text columns, and the recovery column (words), are left-aligned.
    let last = header.len() - 1;
    write_rows(&mut out, &header, &rows, |i| {
        i < text_cols || (columns.recovery && i == last)
    });
    if columns.calls {
        service_and_call_tables(&mut out, experiment, result, with_ci);
    }
    if has_cut(&out) {
        out = out.replacen(
            "half-width)",
            "half-width; [low, high]: ± cut at 0 or 100 %)",
            1,
        );
    }
    for v in result.points.iter().flat_map(|p| &p.variants) {
        if let Some(t) = v.truncations.first() {
            let _ = writeln!(
                out,
                "warning: {} ({} of {} replications truncated; replication {}: {})",
                v.name,
                v.truncations.len(),
                reps,
                t.replication,
                t.reason
            );
        }
    }
    out
}

/// Which columns the main table has beyond the headline ones.
struct Columns {
    /// A column for the second swept setting.
    second: bool,
    /// A request of some variant can be answered degraded ([`shape::can_degrade`]): those
    /// a fallback answered are neither successes nor failures, so their share stands between
    /// the two, and their latency is counted with the successes'.
    degraded: bool,
    /// Some variant has calls below the entry ([`shape::has_calls`]): tables per service and
    /// per call follow.
    calls: bool,
    /// The policy columns some variant has a non-zero value in.
    policy: Vec<(&'static str, Metric)>,
    /// Some variant has a recovery analysis.
    recovery: bool,
}

impl Columns {
    fn new(experiment: &Experiment, result: &ExperimentResult) -> Self {
        let variants = || result.points.iter().flat_map(|p| &p.variants);
        Columns {
            second: experiment
                .sweep
                .as_ref()
                .is_some_and(|s| s.second.is_some()),
            degraded: shape::any_can_degrade(experiment.scenarios()),
            calls: experiment.any_has_calls(),
            policy: POLICY_COLS
                .into_iter()
                .filter(|(_, k)| variants().any(|v| k.value(&v.metrics) != 0.0))
                .collect(),
            recovery: variants().any(|v| v.metrics.recovery.is_some()),
        }
    }

    fn header(&self, experiment: &Experiment) -> Vec<String> {
        let mut header: Vec<String> = Vec::new();
        if let Some(s) = &experiment.sweep {
            header.push(s.path.clone());
            header.extend(s.second.as_ref().map(|axis| axis.path.clone()));
        }
        header.push("variant".into());
        for (h, _) in COLS {
            header.push(match (self.degraded, h) {
                (true, "success p50 ms") => "answered p50 ms".to_string(),
                (true, "success p99 ms") => "answered p99 ms".to_string(),
                (_, h) => h.to_string(),
            });
            if self.degraded && h == "success %" {
                header.push("degraded %".to_string());
            }
        }
        header.extend(self.policy.iter().map(|(h, _)| h.to_string()));
        if self.recovery {
            header.push("recovery".into());
        }
        header
    }

    /// A variant's cells after its name: `-` where its scenario cannot produce a count.
    fn cells(&self, v: &VariantResult, ran: &Variant, with_ci: bool) -> Vec<String> {
        let cell = |k: &Metric| k.format_estimate(&v.metrics, &v.ci95, with_ci);
        let mut row = Vec::new();
        for (h, k) in &COLS {
            row.push(cell(k));
            if self.degraded && *h == "success %" {
                row.push(degraded_cell(v, &ran.scenario, with_ci));
            }
        }
        row.extend(self.policy.iter().map(|(_, k)| {
            if super::produces(k, &ran.scenario) {
                cell(k)
            } else {
                "-".to_string()
            }
        }));
        if self.recovery {
            row.push(recovery_cell(&v.metrics).unwrap_or_default());
        }
        row
    }
}

/// The share of requests a fallback answered, in % as the success share is printed; `-` for
/// a variant whose requests cannot be answered degraded (`scenario`, the one it ran).
pub(super) fn degraded_cell(v: &VariantResult, scenario: &Scenario, with_ci: bool) -> String {
    let d = Metric::SUCCESS_RATE.decimals;
    let e = v.degraded_rate().filter(|_| shape::can_degrade(scenario));
    e.map_or("-".to_string(), |e| {
        Unit::Percent.estimate_text(d, (100.0 * e.mean, 100.0 * e.half_width), with_ci)
    })
}

/// The per-service columns: always shown, then those shown only when some service of some
/// variant has a non-zero value.
pub(super) fn service_columns(variants: &[(&VariantResult, &Variant)]) -> Vec<ServiceMetric> {
    const ALWAYS: [ServiceMetric; 8] = [
        ServiceMetric::ATTEMPTS,
        ServiceMetric::AMPLIFICATION,
        ServiceMetric::SERVED,
        ServiceMetric::WASTED,
        ServiceMetric::REJECTED,
        ServiceMetric::UTILIZATION,
        ServiceMetric::MAX_QUEUE,
        ServiceMetric::GOODPUT,
    ];
    const SOMETIMES: [ServiceMetric; 7] = [
        ServiceMetric::THROTTLED,
        ServiceMetric::EXPIRED_DROPPED,
        ServiceMetric::CANCELLED,
        ServiceMetric::SHED,
        ServiceMetric::DUPLICATES,
        ServiceMetric::DUPLICATE_CALLS,
        ServiceMetric::REPLAYED,
    ];
    let mut cols = ALWAYS.to_vec();
    cols.extend(SOMETIMES.into_iter().filter(|k| {
        variants
            .iter()
            .any(|(v, _)| v.metrics.services.iter().any(|s| k.value(s) != 0.0))
    }));
    cols
}

/// The per-replica columns: always shown, then the counts that some replica of `variants`
/// made.
pub(super) fn replica_columns(variants: &[(&VariantResult, &Variant)]) -> Vec<ServiceMetric> {
    const ALWAYS: [ServiceMetric; 7] = [
        ServiceMetric::ATTEMPTS,
        ServiceMetric::SERVED,
        ServiceMetric::WASTED,
        ServiceMetric::REJECTED,
        ServiceMetric::UTILIZATION,
        ServiceMetric::MAX_QUEUE,
        ServiceMetric::GOODPUT,
    ];
    const SOMETIMES: [ServiceMetric; 7] = [
        ServiceMetric::OUTAGE_REJECTED,
        ServiceMetric::OUTAGE_DROPPED,
        ServiceMetric::THROTTLED,
        ServiceMetric::EXPIRED_DROPPED,
        ServiceMetric::SHED,
        ServiceMetric::EJECTIONS,
        ServiceMetric::EJECTED,
    ];
    let mut cols = ALWAYS.to_vec();
    cols.extend(SOMETIMES.into_iter().filter(|k| {
        variants
            .iter()
            .any(|(v, _)| v.metrics.replicas.iter().any(|s| k.value(s) != 0.0))
    }));
    cols
}

/// Each replica of each service of `v` with more than one, as (service, replica) with its
/// cells for the columns `cols`, in the order of the per-replica metrics.
pub(super) fn replica_rows<'a>(
    v: &VariantResult,
    ran: &'a Variant,
    cols: &[ServiceMetric],
    with_ci: bool,
) -> Vec<((&'a str, u32), Vec<String>)> {
    let services = &ran.scenario.services;
    let owners = ran.scenario.replicas().map(|(i, k)| (i, &services[i], k));
    v.metrics
        .replicas
        .iter()
        .zip(&v.ci95.replicas)
        .zip(owners)
        .map(|((m, h), (i, s, k))| {
            let cells = cols.iter().map(|c| {
                if super::service_produces(c, &ran.scenario, i) {
                    c.format_estimate(m, h, with_ci)
                } else {
                    "-".to_string()
                }
            });
            ((s.name.as_str(), k), cells.collect())
        })
        .collect()
}

/// The per-call columns: always shown, then the optional counts (hedges) that some call
/// of `calls` has.
pub(super) fn call_columns<'a>(
    calls: impl Iterator<Item = &'a crate::metrics::CallMetrics> + Clone,
) -> Vec<CallMetric> {
    const ALWAYS: [CallMetric; 5] = [
        CallMetric::ATTEMPTS_PER_REQUEST,
        CallMetric::RETRIES,
        CallMetric::FAILED,
        CallMetric::DEGRADED,
        CallMetric::BULKHEAD_FULL,
    ];
    let mut cols = ALWAYS.to_vec();
    cols.extend(
        CallMetric::ALL
            .into_iter()
            .filter(|k| ALWAYS.iter().all(|a| a.key != k.key))
            .filter(|k| k.optional && calls.clone().any(|c| k.value(c) != 0.0)),
    );
    cols
}

/// Whether any call of the variants is a route of the entry, with a route success rate.
pub(super) fn has_routes<'a>(
    calls: impl IntoIterator<Item = &'a crate::metrics::CallMetrics>,
) -> bool {
    calls.into_iter().any(|c| c.route_success_rate.is_some())
}

/// A call's route success in % (`mean ± half`), or `-` for a call that is not a route of
/// the entry.
pub(super) fn route_success(
    m: &crate::metrics::CallMetrics,
    h: &crate::metrics::CallMetrics,
    with_ci: bool,
) -> String {
    let h = 100.0 * h.route_success_rate.unwrap_or(0.0);
    m.route_success_rate.map_or("-".to_string(), |m| {
        Unit::Percent.estimate_text(1, (100.0 * m, h), with_ci)
    })
}

/// A short header for a per-service or per-call column.
fn part_header<T>(k: &PartMetric<T>) -> String {
    use crate::metrics::Unit;
    match (k.unit, k.key) {
        (Unit::Times, _) => "attempts/request".to_string(),
        // The table's title says they are the attempts the service received.
        (Unit::Count, "attempts") => "attempts".to_string(),
        (Unit::Count, _) => k.label.to_string(),
        (Unit::PerSecond, _) => format!("{}/s", k.label),
        (u, _) => format!("{} {}", k.label, u.suffix()),
    }
}

/// The names of a call graph's calls, in the order of `metrics.calls`: `from -> to`.
pub(super) fn call_names(variant: &Variant) -> Vec<(String, String)> {
    let services = &variant.scenario.services;
    services
        .iter()
        .flat_map(|s| {
            s.calls.iter().map(move |c| {
                let to = services.get(c.to).map_or("?", |t| t.name.as_str());
                (s.name.clone(), to.to_string())
            })
        })
        .collect()
}

/// Each service of `v` with its cells for the columns `cols`, in the order of the scenario's
/// services (the entry first): `-` where the service cannot produce a count.
pub(super) fn service_rows<'a>(
    v: &VariantResult,
    ran: &'a Variant,
    cols: &[ServiceMetric],
    with_ci: bool,
) -> Vec<(&'a str, Vec<String>)> {
    let names = ran.scenario.services.iter().map(|s| s.name.as_str());
    v.metrics
        .services
        .iter()
        .zip(&v.ci95.services)
        .zip(names)
        .enumerate()
        .map(|(i, ((m, h), name))| {
            let cells = cols.iter().map(|k| {
                if super::service_produces(k, &ran.scenario, i) {
                    k.format_estimate(m, h, with_ci)
                } else {
                    "-".to_string()
                }
            });
            (name, cells.collect())
        })
        .collect()
}

/// Each call of `v` as (caller, callee) with its cells for the columns `cols`, and the route
/// success when `routes`, in the order of the per-call metrics.
pub(super) fn call_rows(
    v: &VariantResult,
    ran: &Variant,
    cols: &[CallMetric],
    routes: bool,
    with_ci: bool,
) -> Vec<((String, String), Vec<String>)> {
    let calls = calls_of(ran);
    v.metrics
        .calls
        .iter()
        .zip(&v.ci95.calls)
        .zip(call_names(ran))
        .enumerate()
        .map(|(i, ((m, h), names))| {
            let mut cells: Vec<String> = cols
                .iter()
                .map(|k| call_cell(k, calls.get(i).copied(), (m, h), with_ci))
                .collect();
            if routes {
                cells.push(route_success(m, h, with_ci));
            }
            (names, cells)
        })
        .collect()
}

/// The per-service and per-call tables of the variants with calls at the focus point: a row
/// per (variant, service) and per (variant, call), the variant named on its first row.
fn service_and_call_tables(
    out: &mut String,
    experiment: &Experiment,
    result: &ExperimentResult,
    with_ci: bool,
) {
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let (Some(point), Some(at)) = (result.points.get(focus), experiment.points.get(focus)) else {
        return;
    };
    let variants: Vec<(&VariantResult, &Variant)> = point
        .variants
        .iter()
        .zip(&at.variants)
        .filter(|(_, ran)| shape::has_calls(&ran.scenario))
        .collect();
    let where_ = match (&experiment.sweep, &point.value) {
        (Some(s), Some(x)) => {
            let mut w = format!(" at {} = {}", s.path, super::value_text(Some(x)));
            if let (Some(second), Some(y)) = (&s.second, &at.second_value) {
                let _ = write!(w, ", {} = {}", second.path, super::value_text(Some(y)));
            }
            w
        }
        _ => String::new(),
    };
    let cols = service_columns(&variants);
    let mut header = vec!["variant".to_string(), "service".to_string()];
    header.extend(cols.iter().map(part_header));
    let mut rows = Vec::new();
    for (v, ran) in &variants {
        for (i, (name, cells)) in service_rows(v, ran, &cols, with_ci).into_iter().enumerate() {
            let mut row = if i == 0 {
                vec![shown(v), format!("{name} (entry)")]
            } else {
                vec![String::new(), name.to_string()]
            };
            row.extend(cells);
            rows.push(row);
        }
    }
    let _ = writeln!(
        out,
        "\nper service{where_} (attempts/request: attempts that reached the service per logical request the clients started)"
    );
    write_rows(out, &header, &rows, |i| i < 2);
    call_table(out, &variants, &where_, with_ci);
}

/// The per-call table of [`service_and_call_tables`], none when no variant has calls.
fn call_table(
    out: &mut String,
    variants: &[(&VariantResult, &Variant)],
    where_: &str,
    with_ci: bool,
) {
    let mut header = vec!["variant".to_string(), "call".to_string()];
    let cols = call_columns(variants.iter().flat_map(|(v, _)| &v.metrics.calls));
    header.extend(cols.iter().map(part_header));
    let routes = has_routes(variants.iter().flat_map(|(v, _)| &v.metrics.calls));
    if routes {
        header.push("route success %".to_string());
    }
    let mut rows = Vec::new();
    for (v, ran) in variants {
        let calls = call_rows(v, ran, &cols, routes, with_ci);
        for (i, ((from, to), cells)) in calls.into_iter().enumerate() {
            let name = if i == 0 { shown(v) } else { String::new() };
            let mut row = vec![name, format!("{from} → {to}")];
            row.extend(cells);
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return;
    }
    let route_words = if routes {
        "; route success: of the requests whose route at the entry includes the call, the share that succeeded in full"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\nper call{where_} (attempts/request: attempts sent on the call per logical request the clients started; failed: calls that failed for good, degraded: those of them a fallback answered{route_words})"
    );
    write_rows(out, &header, &rows, |i| i < 2);
}

/// A variant's name as the table shows it.
fn shown(v: &VariantResult) -> String {
    if v.is_truncated() {
        format!("{} (truncated)", v.name)
    } else {
        v.name.clone()
    }
}

/// Writes a table: the header, a rule and the rows, columns padded to their widest cell, the
/// columns `left` says left-aligned and the rest right-aligned.
fn write_rows(
    out: &mut String,
    header: &[String],
    rows: &[Vec<String>],
    left: impl Fn(usize) -> bool,
) {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = " ".repeat(w - c.chars().count());
            if left(i) {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(header));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let _ = writeln!(out, "{}", rule.join("  "));
    for r in rows {
        let _ = writeln!(out, "{}", line(r));
    }
}

/// The recovery column: "recovered 25 % (median 6.2 s)" or "metastable (0/200)" (none
/// without triggers).
fn recovery_cell(metrics: &Metrics) -> Option<String> {
    let r = metrics.recovery.as_ref()?;
    let (n, k) = (r.replications, r.recovered);
    if k == 0.0 {
        return Some(format!("metastable (0/{n:.0})"));
    }
    let median = r
        .median_recovery_s
        .map_or(String::new(), |m| format!(" (median {m:.1} s)"));
    // A split result never reads as "100 %" or "0 %".
    let pct = 100.0 * r.recovered_fraction;
    let d = crate::metrics::share_decimals(pct, 0);
    Some(format!("recovered {pct:.d$} %{median}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::graph_run;
    use crate::scenario::LoadOptions;

    /// tail-at-scale at 1,500 req/s printed "hedges 19551 ± 27430" and "p50 3.0 ± 1030.3 ms";
    /// double-charge "100.0 ± 0.0" for 99.99 % success.
    #[test]
    fn an_interval_is_cut_at_the_bounds_and_a_share_never_rounds_onto_them() {
        let text = |unit: Unit, d, m, h| unit.estimate_text(d, (m, h), true);
        assert_eq!(text(Unit::Count, 0, 19551.0, 27430.0), "19551 [0, 46981]");
        assert_eq!(text(Unit::Millis, 1, 3.0, 1030.3), "3.0 [0.0, 1033.3]");
        assert_eq!(text(Unit::Percent, 1, 99.2, 1.5), "99.2 [97.7, 100.0]");
        assert_eq!(text(Unit::Count, 0, 100.0, 20.0), "100 ± 20");
        assert_eq!(text(Unit::Percent, 1, 99.9925, 0.005), "99.99 ± 0.01");
        assert_eq!(text(Unit::Percent, 1, 0.004, 0.003), "0.004 ± 0.003");
        assert_eq!(text(Unit::Percent, 1, 100.0, 0.0), "100.0 ± 0.0");
        assert_eq!(
            Unit::Percent.estimate_text(1, (1e-7, 0.0), false),
            "0.0000001"
        );
        assert_eq!(
            Unit::Percent.estimate_text(1, (100.0 - 1e-12, 0.0), false),
            "100.0"
        );
        assert!(has_cut("| 19551 [0, 46981] |") && !has_cut("| v [x] | 3 ± 1 |"));
        // The terminal table says what the brackets mean where it has some: the fixture's
        // utilization of 100.0 ± 3.0 %.
        let (experiment, result) = graph_run(&LoadOptions::default());
        let text = table(&experiment, &result);
        assert!(text.contains("100.0 [97.0, 100.0]"), "{text}");
        assert!(text.starts_with("shop: seed 7, 3 replications (mean ± 95 % half-width; [low, high]: ± cut at 0 or 100 %)"));
    }

    #[test]
    fn a_call_graph_shows_the_degraded_share_and_a_table_per_service_and_per_call() {
        let (experiment, result) = graph_run(&LoadOptions::default());
        let text = table(&experiment, &result);
        println!("{text}");
        let lines: Vec<&str> = text.lines().collect();
        let header = lines[1];
        let (success, degraded, failed) = (
            header.find("success %").unwrap(),
            header.find("degraded %").unwrap(),
            header.find("failed %").unwrap(),
        );
        assert!(success < degraded && degraded < failed, "{header}");
        assert!(header.contains("answered p99 ms") && !header.contains("success p99"));
        assert!(text.contains("\nper service (attempts/request:"));
        assert!(text.contains("\nper call (attempts/request:"));
        let services: Vec<&&str> = lines
            .iter()
            .skip_while(|l| !l.starts_with("per service"))
            .skip(3)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(services.len(), 3 * 4, "a row per variant and service");
        assert!(services[0].starts_with("no retries") && services[0].contains("frontend (entry)"));
        assert!(services[1].starts_with("  ") && services[1].contains("backend"));
        assert!(text.contains("frontend → cache"));
        // Every row of a table has its columns where the header has them.
        let width = |l: &str| l.chars().count();
        let rule = lines
            .iter()
            .skip_while(|l| !l.starts_with("per call"))
            .nth(2)
            .unwrap();
        for row in lines
            .iter()
            .skip_while(|l| !l.starts_with("per call"))
            .skip(3)
        {
            assert_eq!(width(row), width(rule), "{row}");
        }
    }

    #[test]
    fn calls_without_a_fallback_show_the_tables_per_service_but_no_degraded_share() {
        let (mut experiment, result) = graph_run(&LoadOptions::default());
        for v in experiment.points.iter_mut().flat_map(|p| &mut p.variants) {
            for call in v.scenario.services.iter_mut().flat_map(|s| &mut s.calls) {
                call.policy.fallback = None;
            }
        }
        let text = table(&experiment, &result);
        let header = text.lines().nth(1).unwrap();
        assert!(!header.contains("degraded %"), "{header}");
        assert!(header.contains("success p99 ms") && !header.contains("answered"));
        assert!(text.contains("\nper service (") && text.contains("\nper call ("));
    }

    #[test]
    fn a_single_server_table_has_no_graph_columns() {
        let text = r#"{"name": "s", "duration": "1s", "replications": 2,
          "clients": {"count": 3, "workload": {"open": {"rate_per_s": 20}}},
          "server": {"concurrency": 1, "service_time": {"constant": "10ms"}}}"#;
        let experiment = crate::scenario::load_str(text, "s", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&experiment, 1, &|| {});
        let text = table(&experiment, &result);
        for word in ["degraded", "answered", "per service", "per call"] {
            assert!(!text.contains(word), "{word}: {text}");
        }
    }
}
