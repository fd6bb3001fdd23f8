//! Reading a finished run back from its output folder, so that `retrystorm report DIR` can
//! re-render report.md and the figures without simulating again.
//!
//! The scenario comes from scenario.resolved.json (validated again, so the report describes
//! what ran), the numbers from summary.json, the time series from timeseries.csv, the latency
//! distribution from latency.csv, the typical runs from example-runs.csv, for a call
//! graph each service's load over time from service-timeseries.csv, and for a service of
//! more than one replica each replica's from replica-timeseries.csv.
//!
//! Everything is checked before anything renders: the files are of one run (with a
//! manifest.json, each file's SHA-256 and the run id; without one, as written by versions
//! before it, name, seed, replications and version agree), summary.json, the resolved
//! scenario and the CSV files name the same sweep points and variants (and their services
//! and calls), every CSV has the header this version writes and a full row, and every number is finite and in its range
//! (shares in [0, 1], counts, times and widths not negative). Any other folder is an error
//! that names the file and the problem. [`reload_files`] works on the files' bytes alone, so
//! any bytes can be thrown at it: it never panics and never loops.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};

use super::publish::{self, MANIFEST, Manifest};
use super::summary::{GraphNames, Summary, VariantSummary};
use super::timeseries::{
    LATENCY_COLUMNS, REPLICA_COLUMNS, SERVICE_COLUMNS, replica_timeseries_header,
    service_timeseries_header,
};
use crate::engine::SimDuration;
use crate::metrics::{
    BucketLatency, Column, LATENCY_BINS, Metric, Metrics, ServiceMetric, Unit,
    latency_bin_upper_ms, leaves, part_leaves, series::COLUMNS,
};
use crate::metrics::{ExampleRun, ExperimentResult, PointResult, ServiceSeries, VariantResult};
use crate::report::{OutputFile, csv_untext, value_text};
use crate::scenario::{Axis, Experiment, LoadOptions, Point, Scenario, Sweep, load_str, set_path};

const SUMMARY: &str = "summary.json";
const RESOLVED: &str = "scenario.resolved.json";
const TIMESERIES: &str = "timeseries.csv";
const LATENCY: &str = "latency.csv";
const EXAMPLES: &str = "example-runs.csv";
const SWEEP: &str = "sweep.csv";
const SERVICE_SERIES: &str = "service-timeseries.csv";
const REPLICA_SERIES: &str = "replica-timeseries.csv";

/// The files that hold a run's data: checked against the manifest, read back (all but
/// sweep.csv) and, but for latency.csv (which the latency figure writes again), kept as they
/// are when `report DIR` re-renders.
const DATA: [&str; 8] = [
    SUMMARY,
    RESOLVED,
    TIMESERIES,
    SERVICE_SERIES,
    REPLICA_SERIES,
    LATENCY,
    EXAMPLES,
    SWEEP,
];

/// Shares may exceed 1 by rounding this much.
const SHARE_SLACK: f64 = 1e-9;

/// The files of a run folder by name: what [`reload_files`] reads. Plain bytes, so that a
/// test or a fuzzer can make one from anything.
#[derive(Debug, Clone, Default)]
pub struct RunFolder {
    files: BTreeMap<String, Vec<u8>>,
}

impl RunFolder {
    /// A folder of these files.
    pub fn from_files(files: impl IntoIterator<Item = (String, Vec<u8>)>) -> RunFolder {
        RunFolder {
            files: files.into_iter().collect(),
        }
    }

    /// Reads the run folder `dir`: every file retrystorm writes or the manifest lists,
    /// without following symbolic links. A link, a sub-folder or a file retrystorm did not
    /// write is an error. `dir` itself may be a link (it is followed, as for `run --out`).
    pub fn read(dir: &Path) -> anyhow::Result<RunFolder> {
        let meta = std::fs::metadata(dir).with_context(|| {
            format!(
                "cannot read {}; is it a retrystorm output folder?",
                dir.display()
            )
        })?;
        if !meta.is_dir() {
            bail!("{} is not a folder", dir.display());
        }
        let manifest_bytes = match publish::read_regular_file(&dir.join(MANIFEST)) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot read {}", dir.join(MANIFEST).display()));
            }
        };
        let manifest = manifest_bytes
            .as_deref()
            .map(|b| {
                Manifest::parse(b).map_err(|e| anyhow!("{}: {e}", dir.join(MANIFEST).display()))
            })
            .transpose()?;
        let mut files = BTreeMap::new();
        let entries =
            std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
            let path = entry.path();
            let name = entry
                .file_name()
                .into_string()
                .map_err(|n| anyhow!("{}: {n:?} is not a file retrystorm writes", dir.display()))?;
            let kind = entry
                .file_type()
                .with_context(|| format!("cannot inspect {}", path.display()))?;
            if !kind.is_file() {
                bail!(
                    "{} is {}; a retrystorm run folder holds only the files retrystorm wrote",
                    path.display(),
                    if kind.is_symlink() {
                        "a symbolic link"
                    } else {
                        "not a plain file"
                    }
                );
            }
            let listed = manifest.as_ref().is_some_and(|m| m.entry(&name).is_some());
            if !listed && !publish::is_output_name(&name) {
                bail!(
                    "{} is not a file retrystorm writes{}; report DIR re-renders only a retrystorm run folder",
                    path.display(),
                    if manifest.is_some() {
                        " nor one manifest.json lists"
                    } else {
                        ""
                    }
                );
            }
            let bytes = publish::read_regular_file(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            files.insert(name, bytes);
        }
        Ok(RunFolder { files })
    }

    /// The contents of `name`, if the folder has it.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }

    /// The names of its files, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// The data files that `report DIR` keeps as they are (all but latency.csv, which the
    /// latency figure writes again).
    pub fn kept_files(&self) -> Vec<OutputFile> {
        DATA.iter()
            .filter(|name| **name != LATENCY)
            .filter_map(|name| {
                Some(OutputFile {
                    name: name.to_string(),
                    bytes: self.files.get(*name)?.clone(),
                })
            })
            .collect()
    }

    fn require(&self, name: &str) -> anyhow::Result<&[u8]> {
        self.get(name)
            .with_context(|| format!("{name} is missing; is this a retrystorm output folder?"))
    }

    fn json(&self, name: &str) -> anyhow::Result<Value> {
        serde_json::from_slice(self.require(name)?)
            .map_err(|e| anyhow!("{name} is not valid JSON: {e}"))
    }

    /// summary.json, typed: an error names the key that does not fit.
    fn summary(&self) -> anyhow::Result<Summary<'static>> {
        let bytes = self.require(SUMMARY)?;
        let mut reader = serde_json::Deserializer::from_slice(bytes);
        serde_path_to_error::deserialize(&mut reader).map_err(|e| {
            match serde_json::from_slice::<Value>(bytes) {
                Err(e) => anyhow!("{SUMMARY} is not valid JSON: {e}"),
                Ok(doc) if !doc.is_object() => anyhow!("{SUMMARY} is not a JSON object"),
                Ok(_) => anyhow!("{SUMMARY}: `{}`: {}", e.path(), e.inner()),
            }
        })
    }
}

/// Reads the run in `dir`: [`RunFolder::read`], then [`reload_files`].
pub fn reload(dir: &Path) -> anyhow::Result<(Experiment, ExperimentResult)> {
    reload_files(&RunFolder::read(dir)?)
}

/// Checks a run folder's files and reads the run back: the experiment from
/// scenario.resolved.json and the results from the rest. Every problem is an error naming
/// the file; no input makes it panic or loop.
pub fn reload_files(folder: &RunFolder) -> anyhow::Result<(Experiment, ExperimentResult)> {
    check_manifest(folder)?;
    let resolved = folder.json(RESOLVED)?;
    let summary = folder.summary()?;
    check_one_run(&resolved, &summary)?;
    let experiment = rebuild_experiment(&resolved, summary.points().len())
        .map_err(|e| anyhow!("{RESOLVED}: {e:#}"))?;
    let result = read_results(folder, summary, &experiment)?;
    Ok((experiment, result))
}

/// The results of a run folder whose experiment is rebuilt: summary.json's numbers and every
/// data file, checked against `experiment`.
fn read_results(
    folder: &RunFolder,
    summary: Summary,
    experiment: &Experiment,
) -> anyhow::Result<ExperimentResult> {
    let events = summary.events;
    let mut result = ExperimentResult {
        points: read_points(summary, experiment)?,
        events,
        requests: 0,
    };
    read_series(folder.require(TIMESERIES)?, experiment, &mut result)
        .map_err(|e| anyhow!("{TIMESERIES}: {e:#}"))?;
    // Written for the variants with calls below the entry, as `timeseries` writes it.
    let any_calls = experiment.any_has_calls();
    match (folder.get(SERVICE_SERIES), any_calls) {
        (Some(bytes), true) => read_service_series(bytes, experiment, &mut result)
            .map_err(|e| anyhow!("{SERVICE_SERIES}: {e:#}"))?,
        (None, true) => bail!(
            "{SERVICE_SERIES} is missing; a run of a call graph writes it (is this a retrystorm output folder?)"
        ),
        (Some(_), false) => bail!(
            "{SERVICE_SERIES}: this run has no call graph; the file is left from another run (remove it)"
        ),
        (None, false) => {}
    }
    // Written for the variants with replicas, as `timeseries` writes it.
    let any_replicas = crate::report::shape::any_has_replicas(experiment.scenarios());
    match (folder.get(REPLICA_SERIES), any_replicas) {
        (Some(bytes), true) => read_replica_series(bytes, experiment, &mut result)
            .map_err(|e| anyhow!("{REPLICA_SERIES}: {e:#}"))?,
        (None, true) => bail!(
            "{REPLICA_SERIES} is missing; a run of a service with replicas writes it (is this a retrystorm output folder?)"
        ),
        (Some(_), false) => bail!(
            "{REPLICA_SERIES}: this run has no service with replicas; the file is left from another run (remove it)"
        ),
        (None, false) => {}
    }
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    read_latency(folder.require(LATENCY)?, &mut result.points[focus])
        .map_err(|e| anyhow!("{LATENCY}: {e:#}"))?;
    if let Some(bytes) = folder.get(EXAMPLES) {
        read_examples(bytes, experiment, &mut result.points[focus])
            .map_err(|e| anyhow!("{EXAMPLES}: {e:#}"))?;
    }
    match (folder.get(SWEEP), &experiment.sweep) {
        (Some(_), None) => {
            bail!("{SWEEP}: this run has no sweep; the file is left from another run (remove it)")
        }
        (Some(bytes), Some(sweep)) => {
            check_sweep_csv(bytes, sweep).map_err(|e| anyhow!("{SWEEP}: {e:#}"))?
        }
        (None, _) => {}
    }
    Ok(result)
}

/// summary.json's points and variants, checked against the resolved scenario's: the same
/// sweep, the same points and variants, numbers in their ranges. The time series, latency
/// bins and typical runs are left for the CSV files to fill.
fn read_points(summary: Summary, experiment: &Experiment) -> anyhow::Result<Vec<PointResult>> {
    let points = summary.into_points();
    if points.len() != experiment.points.len() {
        bail!(
            "{SUMMARY} has {} sweep points but {RESOLVED} has {}; they are not of one run",
            points.len(),
            experiment.points.len()
        );
    }
    let mut out = Vec::new();
    for (i, ((value, second, variants), at)) in
        points.into_iter().zip(&experiment.points).enumerate()
    {
        let where_ = point_words(value.as_ref(), second.as_ref());
        if value != at.value || second != at.second_value {
            bail!(
                "{SUMMARY}: sweep point {} is {} but {RESOLVED} has {}; they are not of one run",
                i + 1,
                where_.trim_start(),
                point_words(at.value.as_ref(), at.second_value.as_ref()).trim_start(),
            );
        }
        let names: Vec<&str> = at.variants.iter().map(|v| v.name.as_str()).collect();
        let listed: Vec<&str> = variants.iter().map(|v| v.name.as_ref()).collect();
        if listed != names {
            bail!(
                "{SUMMARY}: the variants{where_} are {listed:?} but {RESOLVED} has {names:?}; they are not of one run"
            );
        }
        let mut read = Vec::new();
        for (v, ran) in variants.into_iter().zip(&at.variants) {
            check_variant(&v, &ran.scenario)
                .map_err(|e| anyhow!("{SUMMARY}: variant {:?}{where_}: {e}", ran.name))?;
            read.push(VariantResult {
                name: ran.name.clone(),
                metrics: v.metrics.into_owned(),
                ci95: v.ci95.into_owned(),
                series: Vec::new(),
                latency: Vec::new(),
                success_latency_bins: vec![0.0; LATENCY_BINS],
                bucket: SimDuration::from_nanos(1),
                truncations: v.truncated_replications.into_owned(),
                examples: Vec::new(),
                service_series: Vec::new(),
                replica_series: Vec::new(),
            });
        }
        out.push(PointResult {
            value,
            variants: read,
        });
    }
    Ok(out)
}

/// " at x = 1, y = 2" for a sweep point, empty without a sweep.
fn point_words(value: Option<&Value>, second: Option<&Value>) -> String {
    match (value, second) {
        (Some(x), Some(y)) => format!(" at sweep values {x}, {y}"),
        (Some(x), None) => format!(" at sweep value {x}"),
        _ => String::new(),
    }
}

/// With a manifest: every data file is listed, present and has the listed size and SHA-256,
/// and the run id is the one of summary.json and scenario.resolved.json. Without one (a
/// folder from before manifests) there is nothing to check here.
fn check_manifest(folder: &RunFolder) -> anyhow::Result<()> {
    let Some(bytes) = folder.get(MANIFEST) else {
        return Ok(());
    };
    let manifest = Manifest::parse(bytes).map_err(|e| anyhow!("{MANIFEST}: {e}"))?;
    for name in folder.names() {
        if name != MANIFEST && manifest.entry(name).is_none() && !publish::is_output_name(name) {
            bail!("{name} is not a file retrystorm writes nor one {MANIFEST} lists");
        }
    }
    for name in DATA {
        match (manifest.entry(name), folder.get(name)) {
            (None, None) => {}
            (None, Some(_)) => bail!(
                "{name} is not listed in {MANIFEST}: it is not part of this run (left from another one?)"
            ),
            (Some(_), None) => bail!("{name} is listed in {MANIFEST} but missing"),
            (Some(entry), Some(bytes)) => {
                if entry.bytes != bytes.len() as u64 || entry.sha256 != publish::sha256_hex(bytes) {
                    bail!(
                        "{name} is not the file {MANIFEST} lists (changed after the run, or from another run)"
                    );
                }
            }
        }
    }
    let digest = |name: &str| {
        manifest
            .entry(name)
            .map(|e| e.sha256.clone())
            .with_context(|| format!("{MANIFEST} does not list {name}"))
    };
    if manifest.run_id != publish::run_id(&digest(RESOLVED)?, &digest(SUMMARY)?) {
        bail!("{MANIFEST}: its run id is not the one of {SUMMARY} and {RESOLVED}");
    }
    Ok(())
}

/// summary.json and scenario.resolved.json name the same scenario, seed, replications and
/// version (without a manifest, the check that they are of one run), and the same sweep.
fn check_one_run(resolved: &Value, summary: &Summary) -> anyhow::Result<()> {
    if !resolved.is_object() {
        bail!("{RESOLVED} is not a JSON object");
    }
    let ours = [
        ("name", Some(json!(summary.name))),
        ("seed", Some(json!(summary.seed))),
        ("replications", Some(json!(summary.replications))),
        ("version", summary.version.as_ref().map(|v| json!(v))),
    ];
    for (key, a) in ours {
        let b = resolved.get(key);
        if a.as_ref() != b {
            bail!(
                "{SUMMARY} and {RESOLVED} disagree on `{key}` ({} and {}); they are not of one run",
                a.map_or("nothing".to_string(), |a| a.to_string()),
                b.map_or("nothing".to_string(), Value::to_string),
            );
        }
    }
    let path = |doc: &Value| doc.get("sweep")?.get("path")?.as_str().map(str::to_string);
    match (&summary.sweep, path(resolved)) {
        (None, None) => {}
        (Some(sweep), Some(theirs)) if sweep.path == theirs => {}
        (Some(_), Some(_)) => {
            bail!("{SUMMARY}: its sweep is of another setting than {RESOLVED}'s")
        }
        _ => bail!(
            "{SUMMARY} and {RESOLVED} disagree on whether the run has a sweep; they are not of one run"
        ),
    }
    match &summary.sweep {
        None if summary.variants.is_empty() => bail!("{SUMMARY}: `variants` is empty"),
        Some(sweep) if sweep.points.is_empty() => bail!("{SUMMARY}: `sweep.points` is empty"),
        _ => Ok(()),
    }
}

/// Every number finite and not negative; means of shares in [0, 1] and no more recovered
/// replications than judged ones. The error starts with the offending key, as the file has
/// it: the `server.*` metrics are checked where they live, at `services.0.*`.
fn check_metrics(m: &Metrics, half_widths: bool) -> anyhow::Result<()> {
    let in_file = |key: &str| !key.starts_with("server.");
    for (key, x) in leaves(m)
        .into_iter()
        .chain(part_leaves(m))
        .filter(|(k, _)| in_file(k))
    {
        if !x.is_finite() || x < 0.0 {
            bail!("{key}` is {x:?}, not a finite number >= 0");
        }
    }
    let mut shares: Vec<(String, f64)> = Metric::PER_REPLICATION
        .iter()
        .filter(|k| k.unit == Unit::Percent && in_file(k.key))
        .map(|k| (k.key.to_string(), k.value(m)))
        .collect();
    for (i, s) in m.services.iter().enumerate() {
        for k in ServiceMetric::ALL
            .iter()
            .filter(|k| k.unit == Unit::Percent)
        {
            shares.push((format!("services.{i}.{}", k.key), k.value(s)));
        }
    }
    if let Some(r) = &m.recovery {
        shares.extend(
            [
                Metric::RECOVERED,
                Metric::RECOVERED_LOWER,
                Metric::RECOVERED_UPPER,
                Metric::RECOVERY_WASTED,
            ]
            .map(|k| (k.key.to_string(), k.value(m))),
        );
        if !half_widths && r.recovered > r.replications {
            bail!(
                "recovery.recovered` is {}, more than the {} replications judged",
                r.recovered,
                r.replications
            );
        }
        if !half_widths && (r.p99_back > r.p99_judged || r.p99_judged > r.replications) {
            bail!(
                "recovery.p99_back` is {} of {} replications whose p99 was judged, out of {}: more than there were",
                r.p99_back,
                r.p99_judged,
                r.replications
            );
        }
    }
    // A half-width of a share can exceed 1 (a Student-t interval over few replications).
    for (key, x) in shares.into_iter().filter(|_| !half_widths) {
        if x > 1.0 + SHARE_SLACK {
            bail!("{key}` is {x:?}, but a share lies in [0, 1]");
        }
    }
    Ok(())
}
/// A variant's numbers are in their ranges, and its parts agree with the scenario it ran:
/// it names its services and calls (`graph`) as its resolved scenario does, has a number for
/// each of them and its degraded share (a mean in [0, 1]).
fn check_variant(v: &VariantSummary, scenario: &Scenario) -> anyhow::Result<()> {
    let (metrics, ci95) = (v.metrics.as_ref(), v.ci95.as_ref());
    check_metrics(metrics, false).map_err(|e| anyhow!("`metrics.{e}"))?;
    check_metrics(ci95, true).map_err(|e| anyhow!("`ci95.{e}"))?;
    let names = GraphNames::of(scenario);
    if v.graph != names {
        bail!(
            "`graph` does not name the services and calls of {RESOLVED}; they are not of one run"
        );
    }
    for (doc, m) in [("metrics", metrics), ("ci95", ci95)] {
        if m.groups.len() != names.groups.len() {
            bail!(
                "`{doc}` has {} groups of clients, but {RESOLVED} has {}",
                m.groups.len(),
                names.groups.len()
            );
        }
        if m.services.len() != names.services.len() || m.calls.len() != names.calls.len() {
            bail!(
                "`{doc}` has {} services and {} calls, but {RESOLVED} has {} and {}",
                m.services.len(),
                m.calls.len(),
                names.services.len(),
                names.calls.len()
            );
        }
    }
    let (Some(mean), Some(half_width)) = (metrics.degraded_rate, ci95.degraded_rate) else {
        bail!("`metrics.degraded_rate` or `ci95.degraded_rate` is missing; every variant has both");
    };
    if !mean.is_finite() || !(0.0..=1.0 + SHARE_SLACK).contains(&mean) {
        bail!("`metrics.degraded_rate` is {mean:?}, but a share lies in [0, 1]");
    }
    if !half_width.is_finite() || half_width < 0.0 {
        bail!("`ci95.degraded_rate` is {half_width:?}, not a finite number >= 0");
    }
    Ok(())
}

/// Fills every call-graph variant's per-service series from service-timeseries.csv: a row's
/// sweep values, variant and service must be a point, variant and service of the run, and
/// every service of every call-graph variant at every point has its series.
fn read_service_series(
    bytes: &[u8],
    experiment: &Experiment,
    result: &mut ExperimentResult,
) -> anyhow::Result<()> {
    let two_axes = experiment
        .sweep
        .as_ref()
        .is_some_and(|s| s.second.is_some());
    let header = service_timeseries_header(two_axes);
    let keys = header.len() - SERVICE_COLUMNS.len() - LATENCY_COLUMNS.len() - 2;
    let mut reader = csv_reader(bytes, &header)?;
    let points = PointsByValue::new(experiment, two_axes);
    let mut series: BTreeMap<(usize, usize, usize), SeriesReader> = BTreeMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| anyhow!("{e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        let p = points.of(&record, line)?;
        let name = cell_text(&record, keys - 2);
        let Some(v) = experiment.points[p]
            .variants
            .iter()
            .position(|v| v.name == name)
        else {
            bail!("line {line}: {name:?} is not a variant of this run");
        };
        let service = cell_text(&record, keys - 1);
        let Some(s) = experiment.points[p].variants[v]
            .scenario
            .services
            .iter()
            .position(|s| s.name == service)
            .filter(|_| experiment.points[p].variants[v].scenario.has_calls())
        else {
            bail!("line {line}: {service:?} is not a service of variant {name:?}'s call graph");
        };
        let reader = series.entry((p, v, s)).or_default();
        reader.push_columns(&record, keys, keys + 2, &SERVICE_COLUMNS)?;
        reader.push_latency(&record, keys + 2 + SERVICE_COLUMNS.len())?;
    }
    for (p, (point, at)) in result.points.iter_mut().zip(&experiment.points).enumerate() {
        for (v, (variant, ran)) in point.variants.iter_mut().zip(&at.variants).enumerate() {
            if !ran.scenario.has_calls() {
                continue;
            }
            for (s, service) in ran.scenario.services.iter().enumerate() {
                let Some(rows) = series.remove(&(p, v, s)) else {
                    bail!(
                        "no rows for service {:?} of variant {:?}{}",
                        service.name,
                        variant.name,
                        point_words(point.value.as_ref(), at.second_value.as_ref())
                    );
                };
                variant.service_series.push(ServiceSeries {
                    bucket: SimDuration::from_secs_f64(rows.width),
                    rows: rows.rows,
                    latency: rows.latency,
                });
            }
        }
    }
    Ok(())
}

/// Fills every variant's per-replica series from replica-timeseries.csv: a row's sweep
/// values, variant, service and replica must be a point, variant and replica of the run, and
/// every replica of every variant with replicas at every point has its series.
fn read_replica_series(
    bytes: &[u8],
    experiment: &Experiment,
    result: &mut ExperimentResult,
) -> anyhow::Result<()> {
    let two_axes = experiment
        .sweep
        .as_ref()
        .is_some_and(|s| s.second.is_some());
    let header = replica_timeseries_header(two_axes);
    let keys = header.len() - REPLICA_COLUMNS.len() - 2;
    let mut reader = csv_reader(bytes, &header)?;
    let points = PointsByValue::new(experiment, two_axes);
    let mut series: BTreeMap<(usize, usize, usize), SeriesReader> = BTreeMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| anyhow!("{e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        let p = points.of(&record, line)?;
        let name = cell_text(&record, keys - 3);
        let Some(v) = experiment.points[p]
            .variants
            .iter()
            .position(|v| v.name == name)
        else {
            bail!("line {line}: {name:?} is not a variant of this run");
        };
        let scenario = &experiment.points[p].variants[v].scenario;
        let service = cell_text(&record, keys - 2);
        let replica = cell_text(&record, keys - 1);
        let found = scenario
            .replicas()
            .position(|(s, k)| scenario.services[s].name == service && k.to_string() == replica);
        let Some(r) = found else {
            bail!("line {line}: {service:?} #{replica:?} is not a replica of variant {name:?}");
        };
        series.entry((p, v, r)).or_default().push_columns(
            &record,
            keys,
            keys + 2,
            &REPLICA_COLUMNS,
        )?;
    }
    for (p, (point, at)) in result.points.iter_mut().zip(&experiment.points).enumerate() {
        for (v, (variant, ran)) in point.variants.iter_mut().zip(&at.variants).enumerate() {
            for (r, (s, k)) in ran.scenario.replicas().enumerate() {
                let Some(rows) = series.remove(&(p, v, r)) else {
                    bail!(
                        "no rows for replica {k} of service {:?} of variant {:?}{}",
                        ran.scenario.services[s].name,
                        variant.name,
                        point_words(point.value.as_ref(), at.second_value.as_ref())
                    );
                };
                let latency = vec![None; rows.rows.len()];
                variant.replica_series.push(ServiceSeries {
                    bucket: SimDuration::from_secs_f64(rows.width),
                    rows: rows.rows,
                    latency,
                });
            }
        }
    }
    Ok(())
}

/// Rebuilds the experiment from `scenario.resolved.json`: every variant restated in full, at
/// every sweep point, each validated again. The resolved variants show the first sweep value;
/// each point sets its own values into every variant's document (list indices included), so
/// nothing a variant changed is lost and nothing restated undoes the sweep.
fn rebuild_experiment(resolved: &Value, expected_points: usize) -> anyhow::Result<Experiment> {
    let variants = resolved["variants"]
        .as_array()
        .filter(|v| !v.is_empty())
        .context("it lists no variants")?;
    // A run written before axes had labels gets the label made from its path.
    let axis = |doc: &Value| -> Option<Axis> {
        let mut axis = Axis::new(
            doc.get("path")?.as_str()?,
            doc.get("values")?.as_array()?.clone(),
        );
        if let Some(label) = doc.get("label").and_then(Value::as_str) {
            axis.label = label.to_string();
        }
        axis.base_value = doc.get("base_value").cloned();
        Some(axis)
    };
    let first = resolved.get("sweep").and_then(axis);
    let second = resolved
        .get("sweep")
        .and_then(|s| s.get("second"))
        .and_then(axis);
    let xs: Vec<Option<Value>> = match &first {
        Some(axis) => axis.values.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    let ys: Vec<Option<Value>> = match &second {
        Some(axis) => axis.values.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    // summary.json has a result per point: as many points, or the files are not of one run
    // (and a sweep of millions of points is not loaded).
    if xs.len().checked_mul(ys.len()) != Some(expected_points) {
        bail!(
            "its sweep has {} x {} points but summary.json has {expected_points}; they are not of one run",
            xs.len(),
            ys.len()
        );
    }
    let mut points = Vec::new();
    let mut loaded: Option<Experiment> = None;
    for x in &xs {
        for y in &ys {
            let mut patches = Vec::new();
            for v in variants {
                let mut doc = v["scenario"].clone();
                for (axis, value) in [(&first, x), (&second, y)] {
                    if let (Some(axis), Some(value)) = (axis, value) {
                        set_path(&mut doc, &axis.path, value.clone())
                            .map_err(|e| anyhow!("sweep {e}"))?;
                    }
                }
                patches.push((v["name"].clone(), doc));
            }
            // The first variant is the base; each variant's patch is what turns the base into
            // it, removing the keys it lacks (a distribution or workload of another kind).
            let base = patches[0].1.clone();
            let patches: Vec<Value> = patches
                .into_iter()
                .map(|(name, doc)| json!({"name": name, "patch": merge_diff(&base, &doc)}))
                .collect();
            let mut doc = base
                .as_object()
                .cloned()
                .context("a variant has no scenario")?;
            for key in ["name", "description", "seed", "replications"] {
                if let Some(v) = resolved.get(key) {
                    doc.insert(key.to_string(), v.clone());
                }
            }
            doc.insert("variants".into(), Value::Array(patches));
            let text = serde_json::to_string(&Value::Object(doc))?;
            let mut experiment = load_str(&text, "scenario.resolved.json", &LoadOptions::default())
                .map_err(|e| anyhow!("{e}"))?;
            let point = experiment
                .points
                .pop()
                .context("a point without variants")?;
            points.push(Point {
                value: x.clone(),
                second_value: y.clone(),
                variants: point.variants,
            });
            loaded.get_or_insert(experiment);
        }
    }
    let mut experiment = loaded.context("it describes no run")?;
    experiment.sweep = first.map(|a| Sweep {
        path: a.path,
        label: a.label,
        values: a.values,
        base_value: a.base_value,
        second,
    });
    experiment.points = points;
    Ok(experiment)
}

/// The JSON merge patch (RFC 7396) that turns `from` into `to`: keys of `from` missing in `to`
/// become `null`, objects on both sides are compared key by key, anything else is replaced.
/// Exact as long as `to` holds no `null` (a resolved scenario writes none).
fn merge_diff(from: &Value, to: &Value) -> Value {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let mut patch = serde_json::Map::new();
            for key in a.keys().filter(|k| !b.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            for (key, value) in b {
                match a.get(key) {
                    Some(old) if old == value => {}
                    Some(old) => {
                        patch.insert(key.clone(), merge_diff(old, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            Value::Object(patch)
        }
        _ => to.clone(),
    }
}

/// A CSV reader over `bytes` whose header must be exactly `expected`; every record must have
/// as many fields (the csv crate refuses a record of another length).
fn csv_reader<'a>(bytes: &'a [u8], expected: &[&str]) -> anyhow::Result<csv::Reader<&'a [u8]>> {
    let mut reader = csv::Reader::from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| anyhow!("{e}"))?
        .iter()
        .map(String::from)
        .collect();
    if header != expected {
        bail!(
            "its header is not the one this version writes ({} columns: {}); rerun the scenario",
            expected.len(),
            expected.join(",")
        );
    }
    Ok(reader)
}

/// A number in a CSV cell: finite and not negative.
fn cell_number(record: &csv::StringRecord, i: usize, what: &str) -> anyhow::Result<f64> {
    let line = record.position().map_or(0, |p| p.line());
    let cell = record.get(i).unwrap_or("");
    let x: f64 = cell
        .parse()
        .map_err(|_| anyhow!("line {line}: {what} {cell:?} is not a number"))?;
    if !x.is_finite() || x < 0.0 {
        bail!("line {line}: {what} is {cell}, not a finite number >= 0");
    }
    Ok(x)
}

/// A text cell, as written by [`super::csv_text`].
fn cell_text(record: &csv::StringRecord, i: usize) -> &str {
    csv_untext(record.get(i).unwrap_or(""))
}

/// Stored bucket widths lie between a nanosecond and about 30 years.
fn check_bucket(line: u64, bucket_s: f64) -> anyhow::Result<()> {
    if !(1e-9..=1e9).contains(&bucket_s) {
        bail!("line {line}: bucket_s is {bucket_s}, not a bucket width (1 ns to 1e9 s)");
    }
    Ok(())
}

/// A series' rows: the columns a CSV writes ([`Column::written`]) from `first` on, counts not
/// negative and the
/// budget level a share. `bucket_start_s` must be the row's index times the width, so rows
/// are whole and in order. The time series (not the typical runs) add each bucket's latency.
#[derive(Default)]
struct SeriesReader {
    /// Whether the rows have the `ejected` column.
    ejects: bool,
    width: f64,
    rows: Vec<[f64; COLUMNS]>,
    latency: Vec<Option<BucketLatency>>,
}

impl SeriesReader {
    fn push(
        &mut self,
        record: &csv::StringRecord,
        start_at: usize,
        first: usize,
    ) -> anyhow::Result<()> {
        self.push_columns(record, start_at, first, Column::written(self.ejects))
    }

    /// A row whose cells from `first` on are `columns` (the others are 0).
    fn push_columns(
        &mut self,
        record: &csv::StringRecord,
        start_at: usize,
        first: usize,
        columns: &[Column],
    ) -> anyhow::Result<()> {
        let line = record.position().map_or(0, |p| p.line());
        let start = cell_number(record, start_at, "bucket_start_s")?;
        let bucket = cell_number(record, start_at + 1, "bucket_s")?;
        check_bucket(line, bucket)?;
        if self.rows.is_empty() {
            self.width = bucket;
        } else if bucket != self.width {
            bail!(
                "line {line}: bucket_s is {bucket}, but earlier rows of this series have {}",
                self.width
            );
        }
        let expected = self.rows.len() as f64 * self.width;
        if (start - expected).abs() > 1e-6 * self.width {
            bail!(
                "line {line}: bucket_start_s is {start}, but this series' next bucket starts at {expected}: rows are missing or out of order"
            );
        }
        let mut row = [0.0; COLUMNS];
        for (k, column) in columns.iter().enumerate() {
            row[*column as usize] = cell_number(record, first + k, column.name())?;
        }
        let level = row[Column::BudgetLevel as usize];
        if level > 1.0 + SHARE_SLACK {
            bail!("line {line}: budget_level is {level}, but it lies in [0, 1]");
        }
        self.rows.push(row);
        Ok(())
    }

    /// The row's [`LATENCY_COLUMNS`] from `first` on: both empty (no answer in the bucket),
    /// or both numbers, the median not above the 99th percentile.
    fn push_latency(&mut self, record: &csv::StringRecord, first: usize) -> anyhow::Result<()> {
        let empty = |i: usize| record.get(i).is_none_or(str::is_empty);
        let latency = if empty(first) && empty(first + 1) {
            None
        } else {
            let p50_ms = cell_number(record, first, LATENCY_COLUMNS[0])?;
            let p99_ms = cell_number(record, first + 1, LATENCY_COLUMNS[1])?;
            if p50_ms > p99_ms {
                let line = record.position().map_or(0, |p| p.line());
                bail!("line {line}: p50_ms is {p50_ms}, above p99_ms ({p99_ms})");
            }
            Some(BucketLatency { p50_ms, p99_ms })
        };
        self.latency.push(latency);
        Ok(())
    }
}

/// Fills every variant's time series from timeseries.csv: a row's sweep values and variant
/// must be a point and variant of the run, and every variant at every point has its series.
fn read_series(
    bytes: &[u8],
    experiment: &Experiment,
    result: &mut ExperimentResult,
) -> anyhow::Result<()> {
    let two_axes = experiment
        .sweep
        .as_ref()
        .is_some_and(|s| s.second.is_some());
    let mut header = vec!["sweep_value"];
    if two_axes {
        header.push("second_value");
    }
    header.extend(["variant", "bucket_start_s", "bucket_s"]);
    let keys = header.len() - 2;
    let ejects = experiment.any_detects_outliers();
    let columns = Column::written(ejects);
    header.extend(columns.iter().map(|c| c.name()));
    header.extend(LATENCY_COLUMNS);
    let mut reader = csv_reader(bytes, &header)?;
    let points = PointsByValue::new(experiment, two_axes);
    let mut series: BTreeMap<(usize, usize), SeriesReader> = BTreeMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| anyhow!("{e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        let p = points.of(&record, line)?;
        let name = cell_text(&record, keys - 1);
        let Some(v) = result.points[p]
            .variants
            .iter()
            .position(|v| v.name == name)
        else {
            bail!("line {line}: {name:?} is not a variant of this run");
        };
        let reader = series.entry((p, v)).or_insert_with(|| SeriesReader {
            ejects,
            ..SeriesReader::default()
        });
        reader.push(&record, keys, keys + 2)?;
        reader.push_latency(&record, keys + 2 + columns.len())?;
    }
    for (p, point) in result.points.iter_mut().enumerate() {
        for (v, variant) in point.variants.iter_mut().enumerate() {
            let Some(s) = series.remove(&(p, v)) else {
                bail!(
                    "no rows for variant {:?}{}",
                    variant.name,
                    point_words(
                        point.value.as_ref(),
                        experiment.points[p].second_value.as_ref()
                    )
                );
            };
            variant.bucket = SimDuration::from_secs_f64(s.width);
            variant.series = s.rows;
            variant.latency = s.latency;
        }
    }
    Ok(())
}

/// The latency distribution of successful requests at the focus point, from latency.csv: a
/// row per non-empty bin, its upper edge one of the bins' edges.
fn read_latency(bytes: &[u8], point: &mut PointResult) -> anyhow::Result<()> {
    let mut reader = csv_reader(
        bytes,
        &[
            "variant",
            "latency_ms_at_most",
            "requests",
            "cumulative_fraction",
        ],
    )?;
    let mut seen = BTreeSet::new();
    for record in reader.records() {
        let record = record.map_err(|e| anyhow!("{e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        let name = cell_text(&record, 0);
        let Some(v) = point.variants.iter_mut().find(|v| v.name == name) else {
            bail!("line {line}: {name:?} is not a variant of this run");
        };
        let edge_ms = cell_number(&record, 1, "latency_ms_at_most")?;
        let requests = cell_number(&record, 2, "requests")?;
        let cumulative = cell_number(&record, 3, "cumulative_fraction")?;
        if cumulative > 1.0 + SHARE_SLACK {
            bail!("line {line}: cumulative_fraction is {cumulative}, but it lies in [0, 1]");
        }
        // The bin whose upper edge this is: edge = 1e-3 ms * 10^((i + 1) / bins per decade).
        let bin = (0..LATENCY_BINS)
            .find(|&i| (latency_bin_upper_ms(i) - edge_ms).abs() <= 1e-9 * edge_ms)
            .ok_or_else(|| anyhow!("line {line}: {edge_ms} ms is not the edge of a latency bin"))?;
        if !seen.insert((v.name.clone(), bin)) {
            bail!("line {line}: variant {name:?} has the bin up to {edge_ms} ms twice");
        }
        v.success_latency_bins[bin] = requests;
    }
    Ok(())
}

/// The typical runs of split variants at the focus point, from example-runs.csv: at most two
/// per variant, each a whole series of a replication that exists.
fn read_examples(
    bytes: &[u8],
    experiment: &Experiment,
    point: &mut PointResult,
) -> anyhow::Result<()> {
    let replications = experiment.replications;
    let ejects = experiment.any_detects_outliers();
    let header = super::timeseries::example_runs_header(ejects);
    let mut reader = csv_reader(bytes, &header)?;
    let mut runs: Vec<(usize, ExampleRun, SeriesReader)> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| anyhow!("{e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        let name = cell_text(&record, 0);
        let Some(v) = point.variants.iter().position(|v| v.name == name) else {
            bail!("line {line}: {name:?} is not a variant of this run");
        };
        let replication: u32 = record
            .get(1)
            .and_then(|r| r.parse().ok())
            .filter(|r| *r < replications)
            .ok_or_else(|| {
                anyhow!(
                    "line {line}: replication {:?} is not one of the run's {replications}",
                    record.get(1).unwrap_or("")
                )
            })?;
        let same = runs
            .last()
            .is_some_and(|(w, r, _)| *w == v && r.replication == replication);
        if !same {
            if runs
                .iter()
                .any(|(w, r, _)| *w == v && r.replication == replication)
            {
                bail!(
                    "line {line}: the rows of replication {replication} of {name:?} are not together"
                );
            }
            if runs.iter().filter(|(w, ..)| *w == v).count() == 2 {
                bail!("line {line}: {name:?} has more than two typical runs");
            }
            runs.push((
                v,
                ExampleRun {
                    replication,
                    label: cell_text(&record, 2).to_string(),
                    bucket: SimDuration::from_nanos(1),
                    series: Vec::new(),
                },
                SeriesReader {
                    ejects,
                    ..SeriesReader::default()
                },
            ));
        }
        let (_, _, reader) = runs.last_mut().expect("pushed above");
        reader.push(&record, 3, 5)?;
    }
    for (v, mut run, rows) in runs {
        run.bucket = SimDuration::from_secs_f64(rows.width);
        run.series = rows.rows;
        point.variants[v].examples.push(run);
    }
    Ok(())
}

/// sweep.csv is not read back (summary.json has its numbers), but it must be of this sweep:
/// the swept settings' columns first, then `variant`, and whole rows.
fn check_sweep_csv(bytes: &[u8], sweep: &Sweep) -> anyhow::Result<()> {
    let mut reader = csv::Reader::from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| anyhow!("{e}"))?
        .iter()
        .map(|c| csv_untext(c).to_string())
        .collect();
    let mut expected = vec![sweep.path.clone()];
    if let Some(second) = &sweep.second {
        expected.push(second.path.clone());
    }
    expected.push("variant".into());
    if header.len() < expected.len() || header[..expected.len()] != expected[..] {
        bail!(
            "its first columns are not {}: it is of another sweep",
            expected.join(",")
        );
    }
    for record in reader.records() {
        record.map_err(|e| anyhow!("{e}"))?;
    }
    Ok(())
}

/// The points of a run by their values as the CSV files write them (the first of equal
/// ones), for files with a row per (point, ...): the sweep value in the first column, and
/// the second axis' in the second with two axes.
struct PointsByValue {
    two_axes: bool,
    at: BTreeMap<(String, String), usize>,
}

impl PointsByValue {
    fn new(experiment: &Experiment, two_axes: bool) -> Self {
        let mut at = BTreeMap::new();
        for (i, p) in experiment.points.iter().enumerate() {
            at.entry((
                value_text(p.value.as_ref()),
                value_text(p.second_value.as_ref()),
            ))
            .or_insert(i);
        }
        PointsByValue { two_axes, at }
    }

    /// The point of `record`, at `line` of its file.
    fn of(&self, record: &csv::StringRecord, line: u64) -> anyhow::Result<usize> {
        let x = cell_text(record, 0).to_string();
        let y = if self.two_axes {
            cell_text(record, 1).to_string()
        } else {
            String::new()
        };
        let second = if self.two_axes {
            format!(", {y:?}")
        } else {
            String::new()
        };
        match self.at.get(&(x, y)) {
            Some(&p) => Ok(p),
            None => bail!(
                "line {line}: sweep value {:?}{second} is not a point of this run",
                cell_text(record, 0)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::graph_run;

    /// The files `run` writes for the fixture's call graph, by name.
    fn written(options: &LoadOptions) -> (Experiment, ExperimentResult, RunFolder) {
        let (experiment, result) = graph_run(options);
        let files = super::super::render(&experiment, &result, Default::default(), 1).unwrap();
        let folder = RunFolder::from_files(files.into_iter().map(|f| (f.name, f.bytes)));
        (experiment, result, folder)
    }

    /// Reads the results of `folder` against the experiment that wrote them: what `report
    /// DIR` does once it has rebuilt the experiment from scenario.resolved.json.
    fn read(folder: &RunFolder, experiment: &Experiment) -> anyhow::Result<ExperimentResult> {
        read_results(folder, folder.summary()?, experiment)
    }

    #[test]
    fn a_call_graph_reads_back_and_renders_the_same_report() {
        for options in [
            LoadOptions::default(),
            LoadOptions {
                sweep: Some(Sweep::new("clients.count", vec![10.into(), 20.into()])),
                ..LoadOptions::default()
            },
        ] {
            let (experiment, result, folder) = written(&options);
            let back = read(&folder, &experiment).unwrap();
            for (a, b) in result.points.iter().zip(&back.points) {
                for (v, w) in a.variants.iter().zip(&b.variants) {
                    assert_eq!(v.metrics, w.metrics);
                    assert_eq!(v.ci95, w.ci95);
                    assert_eq!(v.truncations, w.truncations);
                    assert_eq!(v.service_series, w.service_series);
                }
            }
            let render = |r: &ExperimentResult| {
                super::super::render_report(&experiment, r, Default::default(), 1).unwrap()
            };
            for (a, b) in render(&result).iter().zip(render(&back)) {
                assert!(a.bytes == b.bytes, "{} differs once read back", a.name);
            }
        }
    }

    #[test]
    fn truncated_replications_read_back() {
        let (experiment, mut result) = graph_run(&LoadOptions::default());
        let cut = crate::metrics::TruncatedReplication {
            replication: 1,
            reason: "stopped at max_time 1s".into(),
        };
        result.points[0].variants[1].truncations.push(cut.clone());
        let files = super::super::render(&experiment, &result, Default::default(), 1).unwrap();
        let folder = RunFolder::from_files(files.into_iter().map(|f| (f.name, f.bytes)));
        let back = read(&folder, &experiment).unwrap();
        assert_eq!(back.points[0].variants[1].truncations, [cut]);
        assert!(back.points[0].variants[0].truncations.is_empty());
    }

    /// Replaces the first `from` by `to` in `name`'s text.
    fn edit(folder: &RunFolder, name: &str, from: &str, to: &str) -> RunFolder {
        edit_after(folder, name, "", from, to)
    }

    /// Replaces the first `from` after `after` by `to` in `name`'s text.
    fn edit_after(folder: &RunFolder, name: &str, after: &str, from: &str, to: &str) -> RunFolder {
        let text = String::from_utf8(folder.get(name).unwrap().to_vec()).unwrap();
        let start = text.find(after).expect("the anchor is there");
        let at = start + text[start..].find(from).expect("the text is there");
        let text = format!("{}{to}{}", &text[..at], &text[at + from.len()..]);
        let mut files: BTreeMap<String, Vec<u8>> = folder.files.clone();
        files.insert(name.to_string(), text.into_bytes());
        RunFolder { files }
    }

    #[test]
    fn a_call_graph_whose_files_disagree_is_refused_with_the_reason() {
        let (experiment, _, folder) = written(&LoadOptions::default());
        let cases = [
            (
                edit(&folder, SUMMARY, "\"name\": \"cache\"", "\"name\": \"kv\""),
                "`graph` does not name the services",
            ),
            (
                edit(&folder, SUMMARY, "\"fraction\": 0.5", "\"fraction\": 0.25"),
                "`graph` does not name the services",
            ),
            (
                edit(
                    &folder,
                    SUMMARY,
                    "\"degraded_rate\": 0.01,",
                    "\"degraded_rate\": 1.5,",
                ),
                "a share lies in [0, 1]",
            ),
            (
                edit(&folder, SUMMARY, "\"degraded_rate\": 0.01,", ""),
                "`metrics.degraded_rate` or `ci95.degraded_rate` is missing",
            ),
            (
                edit_after(
                    &folder,
                    SUMMARY,
                    "\"goodput_per_s\"",
                    "\"utilization\": 0.",
                    "\"utilization\": 3.",
                ),
                "services.0.utilization` is",
            ),
            (
                edit(&folder, SUMMARY, "\"max_queue\": ", "\"max_queue\": -"),
                "not a finite number >= 0",
            ),
            (
                edit(&folder, SERVICE_SERIES, ",cache,", ",kv,"),
                "\"kv\" is not a service",
            ),
            (
                edit(
                    &folder,
                    SERVICE_SERIES,
                    "attempts,served",
                    "attempts,served_",
                ),
                "its header is not the one",
            ),
        ];
        for (damaged, reason) in cases {
            let e = format!("{:#}", read(&damaged, &experiment).unwrap_err());
            assert!(e.contains(reason), "expected {reason:?} in: {e}");
        }
        // A bucket's latency cells: both or neither, the median not above the 99th
        // percentile.
        for name in [TIMESERIES, SERVICE_SERIES] {
            let text = String::from_utf8(folder.get(name).unwrap().to_vec()).unwrap();
            /// A row's cells before the latency, and its p50 and p99 when p50 < p99.
            fn cells(l: &str) -> Option<(&str, &str, &str)> {
                let (rest, p99) = l.rsplit_once(',')?;
                let (head, p50) = rest.rsplit_once(',')?;
                let (a, b) = (p50.parse::<f64>().ok()?, p99.parse::<f64>().ok()?);
                (a < b).then_some((head, p50, p99))
            }
            let (row, (head, p50, p99)) = text
                .lines()
                .skip(1)
                .find_map(|l| Some((l, cells(l)?)))
                .unwrap();
            for (to, reason) in [
                (format!("{head},{p99},{p50}"), "above p99_ms"),
                (format!("{head},,{p99}"), "p50_ms \"\" is not a number"),
            ] {
                let damaged = edit(&folder, name, row, &to);
                let e = format!("{:#}", read(&damaged, &experiment).unwrap_err());
                assert!(e.contains(reason), "{name}: expected {reason:?} in: {e}");
            }
        }
        let mut files = folder.files.clone();
        files.remove(SERVICE_SERIES);
        let e = read(&RunFolder { files }, &experiment).unwrap_err();
        assert!(
            format!("{e:#}").contains("service-timeseries.csv is missing"),
            "{e:#}"
        );
        // Read against a single server, the graph's names and numbers are another run's.
        let single = load_str(
            crate::report::fixture::SCENARIO,
            "shop",
            &LoadOptions::default(),
        )
        .unwrap();
        let e = format!("{:#}", read(&folder, &single).unwrap_err());
        assert!(e.contains("`graph` does not name the services"), "{e}");
    }

    /// The reader of a call graph's files never panics, whatever their bytes.
    #[test]
    fn a_damaged_call_graph_folder_never_panics_the_reader() {
        use proptest::prelude::*;
        let (experiment, _, folder) = written(&LoadOptions::default());
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 100,
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        let damage = (
            any::<bool>(),
            0usize..4,
            any::<prop::sample::Index>(),
            any::<u8>(),
        );
        runner
            .run(&damage, |(summary, how, at, byte)| {
                let name = if summary { SUMMARY } else { SERVICE_SERIES };
                let mut files = folder.files.clone();
                let bytes = files.get_mut(name).unwrap();
                let i = at
                    .index(bytes.len().max(1))
                    .min(bytes.len().saturating_sub(1));
                match how {
                    0 => bytes.truncate(i),
                    1 if !bytes.is_empty() => bytes[i] = byte,
                    1 => {}
                    2 => {
                        let with = [b"9e9".as_slice(), b"-", b"e308", b"inf", b"NaN"]
                            [usize::from(byte) % 5];
                        bytes.splice(i..i, with.iter().copied());
                    }
                    _ => bytes.retain(|b| *b != b','),
                }
                let folder = RunFolder { files };
                if let Ok(result) = read(&folder, &experiment) {
                    super::super::render_report(&experiment, &result, Default::default(), 1)
                        .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
                }
                Ok(())
            })
            .unwrap();
    }
}
