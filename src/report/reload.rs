//! Reading a finished run back from its output folder, so that `retrystorm report DIR` can
//! re-render report.md and the figures without simulating again.
//!
//! The scenario comes from scenario.resolved.json (validated again, so the report describes
//! what ran), the numbers from summary.json, the time series from timeseries.csv and the
//! latency distribution from latency.csv.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::csv_untext;
use crate::engine::SimDuration;
use crate::metrics::{Column, LATENCY_BINS, LATENCY_BINS_PER_DECADE, Metrics, series::COLUMNS};
use crate::runner::{ExampleRun, ExperimentResult, PointResult, VariantResult};
use crate::scenario::{Axis, Experiment, LoadOptions, Point, Sweep, load_str, set_path};

fn read_json(dir: &Path, name: &str) -> anyhow::Result<Value> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {}; is this a retrystorm output folder?",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))
}

/// Reads the run in `dir`.
pub fn reload(dir: &Path) -> anyhow::Result<(Experiment, ExperimentResult)> {
    let resolved = read_json(dir, "scenario.resolved.json")?;
    let summary = read_json(dir, "summary.json")?;

    let experiment = rebuild_experiment(&resolved)?;
    let series = read_series(dir)?;
    let latency = read_latency(dir)?;
    let mut examples = read_examples(dir)?;
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let summary_points: Vec<(Option<Value>, Option<Value>, &Value)> =
        match summary["sweep"]["points"].as_array() {
            Some(points) => points
                .iter()
                .map(|p| {
                    (
                        Some(p["value"].clone()),
                        p.get("second_value").cloned(),
                        &p["variants"],
                    )
                })
                .collect(),
            None => vec![(None, None, &summary["variants"])],
        };
    let agree = summary_points.len() == experiment.points.len()
        && summary_points
            .iter()
            .zip(&experiment.points)
            .all(|((_, y, _), at)| *y == at.second_value);
    if !agree {
        bail!("summary.json and scenario.resolved.json disagree on the sweep; rerun the scenario");
    }
    let mut points = Vec::new();
    for (i, (value, second_value, variants)) in summary_points.into_iter().enumerate() {
        let key = (
            super::value_text(value.as_ref()),
            super::value_text(second_value.as_ref()),
        );
        let variants = variants
            .as_array()
            .context("summary.json: variants is not a list")?
            .iter()
            .map(|v| {
                let name = v["name"].as_str().unwrap_or_default().to_string();
                let (bucket, rows) = series
                    .get(&(key.0.clone(), key.1.clone(), name.clone()))
                    .cloned()
                    .unwrap_or((SimDuration::from_nanos(1), Vec::new()));
                let latency_bins = if i == focus {
                    latency
                        .get(&name)
                        .cloned()
                        .unwrap_or_else(|| vec![0.0; LATENCY_BINS])
                } else {
                    vec![0.0; LATENCY_BINS]
                };
                let typed = |key: &str| -> anyhow::Result<Metrics> {
                    serde_json::from_value(v[key].clone()).with_context(|| {
                        format!("summary.json: variant {name:?}: `{key}` is not a metrics object")
                    })
                };
                let runs = if i == focus {
                    examples.remove(&name).unwrap_or_default()
                } else {
                    Vec::new()
                };
                Ok(VariantResult {
                    metrics: typed("metrics")?,
                    ci95: typed("ci95")?,
                    name,
                    replications: Vec::new(),
                    series: rows,
                    success_latency_bins: latency_bins,
                    bucket,
                    truncations: Vec::new(),
                    examples: runs,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        points.push(PointResult { value, variants });
    }
    let events = summary["events"].as_u64().unwrap_or(0);
    Ok((
        experiment,
        ExperimentResult {
            points,
            events,
            requests: 0,
        },
    ))
}

/// Rebuilds the experiment from `scenario.resolved.json`: every variant restated in full, at
/// every sweep point, each validated again. The resolved variants show the first sweep value;
/// each point sets its own values into every variant's document (list indices included), so
/// nothing a variant changed is lost and nothing restated undoes the sweep.
fn rebuild_experiment(resolved: &Value) -> anyhow::Result<Experiment> {
    let variants = resolved["variants"]
        .as_array()
        .filter(|v| !v.is_empty())
        .context("scenario.resolved.json lists no variants")?;
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
                            .map_err(|e| anyhow::anyhow!("scenario.resolved.json: sweep {e}"))?;
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
                .context("scenario.resolved.json: a variant has no scenario")?;
            for key in ["name", "description", "seed", "replications"] {
                if let Some(v) = resolved.get(key) {
                    doc.insert(key.to_string(), v.clone());
                }
            }
            doc.insert("variants".into(), Value::Array(patches));
            let text = serde_json::to_string(&Value::Object(doc))?;
            let mut experiment = load_str(&text, "scenario.resolved.json", &LoadOptions::default())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
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
    let mut experiment = loaded.context("scenario.resolved.json describes no run")?;
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

/// Time series by (sweep value, second value, variant): bucket width and rows.
type Series =
    std::collections::BTreeMap<(String, String, String), (SimDuration, Vec<[f64; COLUMNS]>)>;

fn read_series(dir: &Path) -> anyhow::Result<Series> {
    let path = dir.join("timeseries.csv");
    let mut reader =
        csv::Reader::from_path(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let header = reader.headers()?.clone();
    // A two-axis sweep has a second_value column after sweep_value.
    let two_axes = header.get(1) == Some("second_value");
    let keys = if two_axes { 3 } else { 2 };
    let expected: Vec<&str> = Column::ALL.iter().map(|c| c.name()).collect();
    if header.iter().skip(keys + 2).collect::<Vec<_>>() != expected {
        bail!(
            "{} has other columns than this version writes; rerun the scenario",
            path.display()
        );
    }
    let mut out = Series::new();
    for record in reader.records() {
        let record = record?;
        let bucket_s: f64 = record[keys + 1]
            .parse()
            .context("timeseries.csv: bucket_s")?;
        let mut row = [0.0; COLUMNS];
        for (cell, slot) in record.iter().skip(keys + 2).zip(row.iter_mut()) {
            *slot = cell
                .parse()
                .context("timeseries.csv: a value is not a number")?;
        }
        let second = if two_axes { csv_untext(&record[1]) } else { "" };
        let entry = out
            .entry((
                csv_untext(&record[0]).to_string(),
                second.to_string(),
                csv_untext(&record[keys - 1]).to_string(),
            ))
            .or_insert_with(|| (SimDuration::from_secs_f64(bucket_s), Vec::new()));
        entry.1.push(row);
    }
    Ok(out)
}

/// The typical runs of split variants from `example-runs.csv` (absent when none split), by
/// variant, in file order.
fn read_examples(
    dir: &Path,
) -> anyhow::Result<std::collections::BTreeMap<String, Vec<ExampleRun>>> {
    let mut out: std::collections::BTreeMap<String, Vec<ExampleRun>> = Default::default();
    let path = dir.join("example-runs.csv");
    if !path.exists() {
        return Ok(out);
    }
    let mut reader =
        csv::Reader::from_path(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let expected: Vec<&str> = Column::ALL.iter().map(|c| c.name()).collect();
    if reader.headers()?.iter().skip(5).collect::<Vec<_>>() != expected {
        bail!(
            "{} has other columns than this version writes; rerun the scenario",
            path.display()
        );
    }
    for record in reader.records() {
        let record = record?;
        let number = |i: usize| -> anyhow::Result<f64> {
            record[i]
                .parse()
                .with_context(|| format!("{}: {:?} is not a number", path.display(), &record[i]))
        };
        let replication: u32 = record[1]
            .parse()
            .with_context(|| format!("{}: bad replication {:?}", path.display(), &record[1]))?;
        let mut row = [0.0; COLUMNS];
        for (k, slot) in row.iter_mut().enumerate() {
            *slot = number(5 + k)?;
        }
        let runs = out.entry(csv_untext(&record[0]).to_string()).or_default();
        if runs.last().is_none_or(|r| r.replication != replication) {
            runs.push(ExampleRun {
                replication,
                label: csv_untext(&record[2]).to_string(),
                bucket: SimDuration::from_secs_f64(number(4)?),
                series: Vec::new(),
            });
        }
        runs.last_mut().expect("just pushed").series.push(row);
    }
    Ok(out)
}

fn read_latency(dir: &Path) -> anyhow::Result<std::collections::BTreeMap<String, Vec<f64>>> {
    let mut out = std::collections::BTreeMap::new();
    let path = dir.join("latency.csv");
    if !path.exists() {
        return Ok(out);
    }
    let mut reader = csv::Reader::from_path(&path)?;
    for record in reader.records() {
        let record = record?;
        let edge_ms: f64 = record[1].parse()?;
        let requests: f64 = record[2].parse()?;
        // The bin whose upper edge this is: edge = 1e-3 ms * 10^((i + 1) / bins per decade).
        let i = ((edge_ms / 1e-3).log10() * LATENCY_BINS_PER_DECADE as f64).round() as usize;
        let bins = out
            .entry(csv_untext(&record[0]).to_string())
            .or_insert_with(|| vec![0.0; LATENCY_BINS]);
        if let Some(slot) = i.checked_sub(1).and_then(|i| bins.get_mut(i)) {
            *slot = requests;
        }
    }
    Ok(out)
}
