//! Reading a finished run back from its output folder, so that `retrystorm report DIR` can
//! re-render report.md and the figures without simulating again.
//!
//! The scenario comes from scenario.resolved.json (validated again, so the report describes
//! what ran), the numbers from summary.json, the time series from timeseries.csv and the
//! latency distribution from latency.csv.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use crate::engine::SimDuration;
use crate::metrics::{Column, LATENCY_BINS, LATENCY_BINS_PER_DECADE, series::COLUMNS};
use crate::runner::{ExperimentResult, PointResult, VariantResult};
use crate::scenario::{Experiment, LoadOptions, load_str};

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

    // Rebuild a scenario file: the first variant as the base, every variant as a patch that
    // restates it in full.
    let variants = resolved["variants"]
        .as_array()
        .filter(|v| !v.is_empty())
        .context("scenario.resolved.json lists no variants")?;
    let mut doc: Map<String, Value> = variants[0]["scenario"]
        .as_object()
        .cloned()
        .context("scenario.resolved.json: a variant has no scenario")?;
    for key in ["name", "description", "seed", "replications"] {
        if let Some(v) = resolved.get(key) {
            doc.insert(key.to_string(), v.clone());
        }
    }
    if let Some(sweep) = resolved.get("sweep") {
        doc.insert(
            "sweep".into(),
            json!({"path": sweep["path"], "values": sweep["values"]}),
        );
    }
    // A patch that restated the swept setting would undo the sweep: leave it out.
    let swept: Vec<&str> = resolved["sweep"]["path"]
        .as_str()
        .map_or(Vec::new(), |p| p.split('.').collect());
    if swept.iter().any(|k| k.parse::<usize>().is_ok()) {
        bail!(
            "this run sweeps into a list ({}); re-rendering it is not supported yet: run the scenario again",
            swept.join(".")
        );
    }
    let patches: Vec<Value> = variants
        .iter()
        .map(|v| {
            let mut patch = v["scenario"].clone();
            if let Some((last, parents)) = swept.split_last() {
                let parent = parents.iter().try_fold(&mut patch, |d, k| d.get_mut(*k));
                if let Some(Value::Object(map)) = parent {
                    map.remove(*last);
                }
            }
            json!({"name": v["name"], "patch": patch})
        })
        .collect();
    doc.insert("variants".into(), Value::Array(patches));
    let text = serde_json::to_string(&Value::Object(doc))?;
    let mut experiment = load_str(&text, "scenario.resolved.json", &LoadOptions::default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(sweep) = &mut experiment.sweep {
        sweep.base_value = resolved["sweep"].get("base_value").cloned();
    }

    let series = read_series(dir)?;
    let latency = read_latency(dir)?;
    let focus = experiment.sweep.as_ref().map_or(0, |s| s.focus());
    let summary_points: Vec<(Option<Value>, &Value)> = match summary["sweep"]["points"].as_array() {
        Some(points) => points
            .iter()
            .map(|p| (Some(p["value"].clone()), &p["variants"]))
            .collect(),
        None => vec![(None, &summary["variants"])],
    };
    if summary_points.len() != experiment.points.len() {
        bail!("summary.json and scenario.resolved.json disagree on the sweep; rerun the scenario");
    }
    let mut points = Vec::new();
    for (i, (value, variants)) in summary_points.into_iter().enumerate() {
        let key = super::value_text(value.as_ref());
        let variants = variants
            .as_array()
            .context("summary.json: variants is not a list")?
            .iter()
            .map(|v| {
                let name = v["name"].as_str().unwrap_or_default().to_string();
                let (bucket, rows) = series
                    .get(&(key.clone(), name.clone()))
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
                VariantResult {
                    name,
                    metrics: v["metrics"].clone(),
                    ci95: v["ci95"].clone(),
                    replications: Vec::new(),
                    series: rows,
                    latency_bins,
                    bucket,
                    truncations: Vec::new(),
                }
            })
            .collect();
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

type Series = std::collections::BTreeMap<(String, String), (SimDuration, Vec<[f64; COLUMNS]>)>;

fn read_series(dir: &Path) -> anyhow::Result<Series> {
    let path = dir.join("timeseries.csv");
    let mut reader =
        csv::Reader::from_path(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let header = reader.headers()?.clone();
    let expected: Vec<&str> = Column::ALL.iter().map(|c| c.name()).collect();
    if header.iter().skip(4).collect::<Vec<_>>() != expected {
        bail!(
            "{} has other columns than this version writes; rerun the scenario",
            path.display()
        );
    }
    let mut out = Series::new();
    for record in reader.records() {
        let record = record?;
        let bucket_s: f64 = record[3].parse().context("timeseries.csv: bucket_s")?;
        let mut row = [0.0; COLUMNS];
        for (cell, slot) in record.iter().skip(4).zip(row.iter_mut()) {
            *slot = cell
                .parse()
                .context("timeseries.csv: a value is not a number")?;
        }
        let entry = out
            .entry((record[0].to_string(), record[1].to_string()))
            .or_insert_with(|| (SimDuration::from_secs_f64(bucket_s), Vec::new()));
        entry.1.push(row);
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
            .entry(record[0].to_string())
            .or_insert_with(|| vec![0.0; LATENCY_BINS]);
        if let Some(slot) = i.checked_sub(1).and_then(|i| bins.get_mut(i)) {
            *slot = requests;
        }
    }
    Ok(out)
}
