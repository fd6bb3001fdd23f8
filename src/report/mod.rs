//! Turning results into what people read: the figures (each with the CSV of what it drew),
//! report.md and the terminal table. The run's data files (summary.json, the time series,
//! sweep.csv, scenario.resolved.json) and the writing of the folder are [`crate::output`]'s.
//! Everything is rendered before anything is written, so a run that fails leaves no partial
//! output behind.

pub mod charts;
#[cfg(test)]
pub(crate) mod fixture;
mod markdown;
pub(crate) mod shape;
mod table;
mod theory;

pub use charts::ImageFormat;
pub use markdown::{findings, report_md, truncation_notes};
pub use table::table;

use std::borrow::Cow;

use crate::metrics::{CallMetric, ExperimentResult, Metric, Needs, ServiceMetric};
use crate::model::Discipline;
use crate::scenario::{Call, Experiment, Policy, Scenario, ServerKind};

/// Whether a variant running `scenario` can make the headline count `metric` at all: the
/// run's counts are those of the clients' calls into the entry service. Where it cannot, a
/// table prints `-` rather than a zero, so that a zero means the policy was there and did
/// nothing.
pub(crate) fn produces(metric: &Metric, scenario: &Scenario) -> bool {
    needs_met(metric.needs, scenario, 0)
}

/// Whether service `s` of `scenario` can make its count `metric` at all: its discipline and
/// the policies of the calls into it decide.
pub(crate) fn service_produces(metric: &ServiceMetric, scenario: &Scenario, s: usize) -> bool {
    needs_met(metric.needs, scenario, s)
}

/// Whether `call` can make its count `metric` at all: its own policy decides.
pub(crate) fn call_produces(metric: &CallMetric, call: &Call) -> bool {
    policy_meets(metric.needs, &call.policy)
}

/// Whether `needs` is met at service `s` of `scenario`: by its discipline, or by a policy of
/// a call into it (the clients' for the entry), or of any call for a need of the whole run (a
/// local rejection or a fallback anywhere decides how a request ends).
fn needs_met(needs: Needs, scenario: &Scenario, s: usize) -> bool {
    let calls = || scenario.services.iter().flat_map(|x| &x.calls);
    let clients = scenario.client_policies().filter(|_| s == 0);
    match needs {
        Needs::Codel => matches!(
            &scenario.services[s].server.kind,
            ServerKind::Queue(q) if matches!(q.discipline, Discipline::Codel { .. })
        ),
        Needs::RateLimit => scenario.services[s].server.rate_limit.is_some(),
        Needs::OutlierDetection => scenario.services[s].server.pool.outlier.is_some(),
        Needs::ThrottleAnywhere | Needs::Fallback | Needs::BulkheadAnywhere => (scenario
            .client_policies())
        .chain(calls().map(|c| &c.policy))
        .any(|p| policy_meets(needs, p)),
        _ => clients
            .chain(calls().filter(|c| c.to == s).map(|c| &c.policy))
            .any(|p| policy_meets(needs, p)),
    }
}

/// Whether policy `p` meets `needs` on its own (a discipline is no policy's).
fn policy_meets(needs: Needs, p: &Policy) -> bool {
    match needs {
        Needs::Nothing => true,
        Needs::Budget => p.budget.is_some(),
        Needs::Breaker => p.breaker.is_some(),
        Needs::Hedge => p.hedge.is_some(),
        Needs::HedgeCancel => p.hedge.as_ref().is_some_and(|h| h.cancel),
        Needs::Throttle | Needs::ThrottleAnywhere => p.adaptive_throttle.is_some(),
        Needs::RateLimiter => p.client_rate_limiter.is_some(),
        Needs::NonIdempotent => !p.idempotent,
        Needs::IdempotencyKey => p.idempotency_key.is_some(),
        Needs::Fallback => p.fallback.is_some(),
        Needs::Bulkhead | Needs::BulkheadAnywhere => p.bulkhead.is_some(),
        Needs::Codel | Needs::RateLimit | Needs::OutlierDetection => false,
    }
}

/// A sweep value as tables and CSV files show it: a string without its quotes, anything else
/// as JSON; no value (no sweep) is empty.
pub fn value_text(v: Option<&serde_json::Value>) -> String {
    match v {
        None => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A text cell as retrystorm writes it into a CSV file. A cell that a spreadsheet would take
/// for a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading
/// `'`, as OWASP advises, unless it is a finite number; so does a cell that starts with `'`,
/// so that [`csv_untext`] gives back the text exactly. The csv crate quotes commas, quotes and
/// line breaks.
pub fn csv_text(text: &str) -> Cow<'_, str> {
    let risky = text.starts_with(['=', '+', '-', '@', '\t', '\r', '\''])
        && !text.parse::<f64>().is_ok_and(f64::is_finite);
    if risky {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The text of a cell written by [`csv_text`].
pub fn csv_untext(cell: &str) -> &str {
    cell.strip_prefix('\'').unwrap_or(cell)
}

/// Every cell of a CSV document through [`csv_text`]: for the figures' CSVs, whose text cells
/// (variant names, sweep values, labels) are written in many places.
fn defuse_csv(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    for record in reader.records() {
        let record = record?;
        writer.write_record(record.iter().map(|cell| csv_text(cell).into_owned()))?;
    }
    writer.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// A rendered output file: its name inside the output folder and its bytes.
#[derive(Debug, Clone)]
pub struct OutputFile {
    /// File name, relative to the output folder.
    pub name: String,
    /// Contents.
    pub bytes: Vec<u8>,
}

impl OutputFile {
    /// The file `name` with `bytes`.
    pub fn new(name: impl Into<String>, bytes: Vec<u8>) -> OutputFile {
        OutputFile {
            name: name.into(),
            bytes,
        }
    }
}

/// Renders report.md and the figures (each with its CSV, drawn on `threads` threads, 0: all
/// cores): what `retrystorm report DIR` re-renders from a finished run.
pub fn render_report(
    experiment: &Experiment,
    result: &ExperimentResult,
    format: ImageFormat,
    threads: usize,
) -> anyhow::Result<Vec<OutputFile>> {
    let mut files = Vec::new();
    let figures = charts::figures(experiment, result, format, threads)?;
    let refs: Vec<markdown::FigureRef> = figures
        .iter()
        .map(|f| markdown::FigureRef {
            file: format!("{}.{}", f.stem, format.extension()),
            caption: f.caption.clone(),
        })
        .collect();
    files.push(OutputFile {
        name: "report.md".into(),
        bytes: report_md(experiment, result, &refs).into_bytes(),
    });
    for figure in figures {
        files.push(OutputFile {
            name: format!("{}.{}", figure.stem, format.extension()),
            bytes: figure.image,
        });
        files.push(OutputFile {
            name: format!("{}.csv", figure.stem),
            bytes: defuse_csv(&figure.csv)?,
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one variant of a scenario text.
    fn scenario(text: &str) -> crate::scenario::Scenario {
        let e = crate::scenario::load_str(text, "t", &Default::default())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        e.points[0].variants[0].scenario.clone()
    }

    /// The counts that only a policy or discipline produces.
    const POLICY_COUNTS: [Metric; 11] = [
        Metric::BUDGET_DENIALS,
        Metric::BREAKER_REFUSALS,
        Metric::BREAKER_OPEN,
        Metric::HEDGES,
        Metric::HEDGE_WINS,
        Metric::FAILED_THROTTLED_LOCALLY,
        Metric::SHED,
        Metric::CANCELLED,
        Metric::DUPLICATES,
        Metric::DUPLICATE_CALLS,
        Metric::REPLAYED,
    ];

    /// A table prints `-`, not a zero, exactly where no policy could produce the count.
    #[test]
    fn only_a_policy_that_can_produce_a_count_gets_a_number() {
        let single = |policy: &str, discipline: &str| {
            scenario(&format!(
                r#"{{"name": "t", "duration": "1s",
                  "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 10}}}}}},
                  "server": {{"discipline": {discipline}, "service_time": {{"constant": "1ms"}}}},
                  "policy": {{"timeout": "1s", {policy}}}}}"#
            ))
        };
        let plain = single(r#""retry": {"max_attempts": 2}"#, r#""fifo""#);
        for k in POLICY_COUNTS {
            assert!(!produces(&k, &plain), "{k:?}");
        }
        for k in [Metric::ATTEMPTS, Metric::WASTED, Metric::FAILED_TIMEOUT] {
            assert!(produces(&k, &plain), "{k:?}");
        }
        let all = single(
            r#""budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}},
               "breaker": {}, "hedge": {"delay": "10ms", "cancel": true},
               "adaptive_throttle": true, "idempotent": false, "idempotency_key": true"#,
            r#""codel""#,
        );
        for k in POLICY_COUNTS {
            assert!(produces(&k, &all), "{k:?}");
        }
        // In a graph, a service's counts follow the calls into it.
        let graph = scenario(
            r#"{"name": "g", "duration": "1s",
              "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}, "entry": "a"},
              "services": {
                "a": {"service_time": {"constant": "1ms"}, "calls": [
                  {"to": "b", "policy": {"idempotent": false, "hedge": {"delay": "5ms"}}}]},
                "b": {"service_time": {"constant": "1ms"}}}}"#,
        );
        assert!(!service_produces(&ServiceMetric::DUPLICATES, &graph, 0));
        assert!(service_produces(&ServiceMetric::DUPLICATES, &graph, 1));
        assert!(
            !service_produces(&ServiceMetric::CANCELLED, &graph, 1),
            "hedges without cancel"
        );
        assert!(!service_produces(&ServiceMetric::REPLAYED, &graph, 1));
        let call = &graph.services[0].calls[0];
        assert!(call_produces(&CallMetric::HEDGES, call));
        assert!(!call_produces(&CallMetric::THROTTLED_LOCALLY, call));
    }

    #[test]
    fn csv_cells_that_start_a_formula_are_defused_and_read_back() {
        for (text, written) in [
            ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
            ("+1+2", "'+1+2"),
            ("-x", "'-x"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("'quoted", "''quoted"),
            ("-inf", "'-inf"),
            ("-1.5", "-1.5"),
            ("+3", "+3"),
            ("full jitter", "full jitter"),
            ("", ""),
        ] {
            assert_eq!(csv_text(text), written, "{text:?}");
            assert_eq!(csv_untext(&csv_text(text)), text, "{text:?}");
        }
    }
    #[test]
    fn defusing_a_csv_changes_only_risky_cells() {
        let csv = b"variant,x\n=cmd,-1\n\"a,b\",2\nplain,3\n";
        let out = defuse_csv(csv).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "variant,x\n'=cmd,-1\n\"a,b\",2\nplain,3\n"
        );
    }
}
