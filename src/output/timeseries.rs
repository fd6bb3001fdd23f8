//! `timeseries.csv`: one row per time bucket per variant (and sweep value), means over
//! replications. Count columns are per bucket; `queue_len`, `in_service` and `in_flight` are
//! the state at the end of the bucket, and so is `ejected`, written only by a run with
//! outlier detection. A two-axis sweep adds a `second_value` column after
//! `sweep_value`. Names and sweep values go through [`csv_text`], so that no cell reads as a
//! spreadsheet formula.
//!
//! A run with calls below the entry adds `service-timeseries.csv`: the same rows per service,
//! with the columns a service has ([`SERVICE_COLUMNS`]). A run with a service of more than
//! one replica adds `replica-timeseries.csv`: the rows per replica, with the columns a
//! replica's series has ([`REPLICA_COLUMNS`]) and no latency.
//!
//! Both end with [`LATENCY_COLUMNS`]: the p50 and p99 of the answers that ended in the bucket,
//! pooled over replications (answered requests in timeseries.csv, the attempts a service
//! answered in service-timeseries.csv), both empty where the bucket had none.

use crate::metrics::ExperimentResult;
use crate::metrics::{BucketLatency, Column};
use crate::report::{csv_text, value_text};
use crate::scenario::Experiment;

/// Renders the time series of every variant.
pub fn timeseries_csv(
    experiment: &Experiment,
    result: &ExperimentResult,
) -> anyhow::Result<Vec<u8>> {
    let two_axes = experiment
        .sweep
        .as_ref()
        .is_some_and(|s| s.second.is_some());
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["sweep_value"];
    if two_axes {
        header.push("second_value");
    }
    header.extend(["variant", "bucket_start_s", "bucket_s"]);
    let columns = Column::written(experiment.any_detects_outliers()).len();
    header.extend(Column::ALL[..columns].iter().map(|c| c.name()));
    header.extend(LATENCY_COLUMNS);
    w.write_record(&header)?;
    // One reused cell rather than a string a cell: the file has tens of thousands of rows.
    let mut cell = String::new();
    for (point, at) in result.points.iter().zip(&experiment.points) {
        let text = |v: Option<&serde_json::Value>| csv_text(&value_text(v)).into_owned();
        let mut values = vec![text(point.value.as_ref())];
        if two_axes {
            values.push(text(at.second_value.as_ref()));
        }
        for v in &point.variants {
            let name = csv_text(&v.name);
            let width = v.bucket.as_nanos();
            for (i, row) in v.series.iter().enumerate() {
                for value in &values {
                    w.write_field(value)?;
                }
                w.write_field(name.as_ref())?;
                // From integer nanoseconds, so bucket starts print exactly (10.7, not
                // 10.700000000000001).
                let start = crate::engine::SimTime(i as u64 * width);
                write_number(&mut w, &mut cell, start.as_nanos() as f64 / 1e9)?;
                write_number(&mut w, &mut cell, width as f64 / 1e9)?;
                for x in &row[..columns] {
                    write_number(&mut w, &mut cell, *x)?;
                }
                for x in latency_cells(v.latency.get(i)) {
                    w.write_field(x)?;
                }
                w.write_record(None::<&[u8]>)?;
            }
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// The last columns of timeseries.csv and service-timeseries.csv: the bucket's p50 and p99
/// of answers, in milliseconds.
pub(super) const LATENCY_COLUMNS: [&str; 2] = ["p50_ms", "p99_ms"];

/// The cells of [`LATENCY_COLUMNS`] for a bucket: empty without an answer.
fn latency_cells(latency: Option<&Option<BucketLatency>>) -> [String; 2] {
    match latency.copied().flatten() {
        Some(l) => [format_number(l.p50_ms), format_number(l.p99_ms)],
        None => [String::new(), String::new()],
    }
}

/// The columns a service's load over time fills (the others are zero).
pub(crate) const SERVICE_COLUMNS: [Column; 5] = [
    Column::Attempts,
    Column::Served,
    Column::Wasted,
    Column::QueueLen,
    Column::InService,
];

/// The header of service-timeseries.csv, which the writer and `report DIR`'s reader share.
pub(super) fn service_timeseries_header(two_axes: bool) -> Vec<&'static str> {
    let mut header = vec!["sweep_value"];
    if two_axes {
        header.push("second_value");
    }
    header.extend(["variant", "service", "bucket_start_s", "bucket_s"]);
    header.extend(SERVICE_COLUMNS.iter().map(|c| c.name()));
    header.extend(LATENCY_COLUMNS);
    header
}

/// `service-timeseries.csv`: for the variants with calls below the entry, one row per time
/// bucket per service per variant (and sweep value), means over replications, in the order
/// of the scenario's services: attempts that reached the service, attempts served and wasted
/// per bucket, the queue and attempts holding a worker at the bucket's end, and the p50 and
/// p99 response time of the attempts it answered (from arrival to answer). `None` when
/// no variant has calls: the one service's series is timeseries.csv.
pub fn service_timeseries_csv(
    experiment: &Experiment,
    result: &ExperimentResult,
) -> anyhow::Result<Option<Vec<u8>>> {
    if !experiment.any_has_calls() {
        return Ok(None);
    }
    let two_axes = experiment
        .sweep
        .as_ref()
        .is_some_and(|s| s.second.is_some());
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(service_timeseries_header(two_axes))?;
    for (point, at) in result.points.iter().zip(&experiment.points) {
        let text = |v: Option<&serde_json::Value>| csv_text(&value_text(v)).into_owned();
        let mut values = vec![text(point.value.as_ref())];
        if two_axes {
            values.push(text(at.second_value.as_ref()));
        }
        let with_calls = point.variants.iter().zip(&at.variants);
        for (v, ran) in with_calls.filter(|(_, ran)| ran.scenario.has_calls()) {
            for (series, service) in v.service_series.iter().zip(&ran.scenario.services) {
                let width = series.bucket.as_nanos();
                for (i, row) in series.rows.iter().enumerate() {
                    let start = crate::engine::SimTime(i as u64 * width);
                    let mut record = values.clone();
                    record.extend([
                        csv_text(&v.name).into_owned(),
                        csv_text(&service.name).into_owned(),
                        format_number(start.as_nanos() as f64 / 1e9),
                        format_number(width as f64 / 1e9),
                    ]);
                    record.extend(
                        SERVICE_COLUMNS
                            .iter()
                            .map(|c| format_number(row[*c as usize])),
                    );
                    record.extend(latency_cells(series.latency.get(i)));
                    w.write_record(&record)?;
                }
            }
        }
    }
    Ok(Some(w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?))
}

/// The columns a replica's load over time fills: the attempts its callers' balancers sent
/// it per bucket, and its queue and attempts in service at the bucket's end.
pub(crate) const REPLICA_COLUMNS: [Column; 3] =
    [Column::Attempts, Column::QueueLen, Column::InService];

/// The header of replica-timeseries.csv, which the writer and `report DIR`'s reader share.
pub(super) fn replica_timeseries_header(two_axes: bool) -> Vec<&'static str> {
    let mut header = vec!["sweep_value"];
    if two_axes {
        header.push("second_value");
    }
    header.extend([
        "variant",
        "service",
        "replica",
        "bucket_start_s",
        "bucket_s",
    ]);
    header.extend(REPLICA_COLUMNS.iter().map(|c| c.name()));
    header
}

/// `replica-timeseries.csv`: for the variants with a service of more than one replica, one
/// row per time bucket per replica per variant (and sweep value), means over replications,
/// service by service and replica by replica (numbered from 0): the attempts sent to the
/// replica per bucket, and its queue and attempts in service at the bucket's end. `None`
/// when no variant has replicas.
pub fn replica_timeseries_csv(
    experiment: &Experiment,
    result: &ExperimentResult,
) -> anyhow::Result<Option<Vec<u8>>> {
    if !crate::report::shape::any_has_replicas(experiment.scenarios()) {
        return Ok(None);
    }
    let two_axes = experiment
        .sweep
        .as_ref()
        .is_some_and(|s| s.second.is_some());
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(replica_timeseries_header(two_axes))?;
    for (point, at) in result.points.iter().zip(&experiment.points) {
        let text = |v: Option<&serde_json::Value>| csv_text(&value_text(v)).into_owned();
        let mut values = vec![text(point.value.as_ref())];
        if two_axes {
            values.push(text(at.second_value.as_ref()));
        }
        for (v, ran) in point.variants.iter().zip(&at.variants) {
            let services = &ran.scenario.services;
            for (series, (s, k)) in v.replica_series.iter().zip(ran.scenario.replicas()) {
                let service = &services[s].name;
                let width = series.bucket.as_nanos();
                for (i, row) in series.rows.iter().enumerate() {
                    let start = crate::engine::SimTime(i as u64 * width);
                    let mut record = values.clone();
                    record.extend([
                        csv_text(&v.name).into_owned(),
                        csv_text(service).into_owned(),
                        k.to_string(),
                        format_number(start.as_nanos() as f64 / 1e9),
                        format_number(width as f64 / 1e9),
                    ]);
                    record.extend(
                        REPLICA_COLUMNS
                            .iter()
                            .map(|c| format_number(row[*c as usize])),
                    );
                    w.write_record(&record)?;
                }
            }
        }
    }
    Ok(Some(w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?))
}

/// `example-runs.csv`: the raw time series of the typical replications of the variants whose
/// replications split (at the focus point), with the columns of timeseries.csv: what the
/// `replications` figure draws, and what `retrystorm report DIR` reads back to draw it again.
/// `None` when no variant split.
pub fn example_runs_csv(
    experiment: &Experiment,
    result: &ExperimentResult,
) -> anyhow::Result<Option<Vec<u8>>> {
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let variants = &result.points[focus].variants;
    if variants.iter().all(|v| v.examples.is_empty()) {
        return Ok(None);
    }
    let ejects = experiment.any_detects_outliers();
    let columns = Column::written(ejects).len();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(example_runs_header(ejects))?;
    for v in variants {
        for e in &v.examples {
            let width = e.bucket.as_nanos();
            for (i, row) in e.series.iter().enumerate() {
                let start = crate::engine::SimTime(i as u64 * width);
                let mut record = vec![
                    csv_text(&v.name).into_owned(),
                    e.replication.to_string(),
                    csv_text(&e.label).into_owned(),
                    format_number(start.as_nanos() as f64 / 1e9),
                    format_number(width as f64 / 1e9),
                ];
                record.extend(row[..columns].iter().map(|x| format_number(*x)));
                w.write_record(&record)?;
            }
        }
    }
    Ok(Some(w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?))
}

/// Shortest exact representation; integers without a fraction.
pub(crate) fn format_number(x: f64) -> String {
    let mut cell = String::new();
    push_number(&mut cell, x);
    cell
}

/// [`format_number`] written at the end of `cell`.
fn push_number(cell: &mut String, x: f64) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = if x == x.trunc() && x.abs() < 1e15 {
        write!(cell, "{}", x as i64)
    } else {
        write!(cell, "{x}")
    };
}

/// Writes `x` as [`format_number`] does, as the next field of `w`, through `cell`.
fn write_number<W: std::io::Write>(
    w: &mut csv::Writer<W>,
    cell: &mut String,
    x: f64,
) -> csv::Result<()> {
    cell.clear();
    push_number(cell, x);
    w.write_field(cell.as_bytes())
}

/// The header of example-runs.csv, which the writer above and `report DIR`'s reader share;
/// `ejects`: a run with outlier detection ([`Column::written`]).
pub(super) fn example_runs_header(ejects: bool) -> Vec<&'static str> {
    let mut header = vec![
        "variant",
        "replication",
        "run",
        "bucket_start_s",
        "bucket_s",
    ];
    header.extend(Column::written(ejects).iter().map(|c| c.name()));
    header
}
