//! `summary.json`: the shape scripts rely on (docs/format.md and README.md), means with 95 % half-widths.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};

use crate::runner::{ExperimentResult, VariantResult};
use crate::scenario::Experiment;

/// The summary document.
pub fn summary_json(experiment: &Experiment, result: &ExperimentResult) -> Value {
    let variants = |vs: &[VariantResult]| -> Vec<Value> { vs.iter().map(variant_json).collect() };
    let mut doc = json!({
        "name": experiment.name,
        "seed": experiment.seed,
        "replications": experiment.replications,
        "version": env!("CARGO_PKG_VERSION"),
    });
    if let Some(d) = &experiment.description {
        doc["description"] = json!(d);
    }
    match &experiment.sweep {
        None => {
            doc["variants"] = json!(variants(&result.points[0].variants));
        }
        Some(sweep) => {
            doc["variants"] = json!([]);
            // The experiment's points are the results' points, in the same order; they
            // also know the second axis' value.
            let points: Vec<Value> = result
                .points
                .iter()
                .zip(&experiment.points)
                .map(|(p, at)| match &at.second_value {
                    None => json!({"value": p.value, "variants": variants(&p.variants)}),
                    Some(y) => json!({
                        "value": p.value,
                        "second_value": y,
                        "variants": variants(&p.variants),
                    }),
                })
                .collect();
            doc["sweep"] = match &sweep.second {
                None => json!({"path": sweep.path, "points": points}),
                Some(second) => json!({
                    "path": sweep.path,
                    "second": {"path": second.path, "values": second.values},
                    "points": points,
                }),
            };
        }
    }
    doc["events"] = json!(result.events);
    doc
}

fn variant_json(v: &VariantResult) -> Value {
    let mut out = json!({"name": v.name, "metrics": v.metrics, "ci95": v.ci95});
    if !v.truncations.is_empty() {
        let notes: Vec<Value> = v
            .truncations
            .iter()
            .map(|(rep, why)| json!({"replication": rep, "reason": why.to_string()}))
            .collect();
        out["truncated_replications"] = json!(notes);
    }
    out
}

/// summary.json's bytes: [`summary_json`] pretty-printed with a final newline, byte for byte,
/// but written as it is serialized. Only one sweep point's part of the document is built as a
/// `Value` at a time, so a sweep of many points never holds the whole document as a tree,
/// which takes several times the memory of its text.
pub fn summary_bytes(
    experiment: &Experiment,
    result: &ExperimentResult,
) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    serde_json::to_writer_pretty(&mut bytes, &Document { experiment, result })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The document of [`summary_json`], with its keys in the same order.
struct Document<'a> {
    experiment: &'a Experiment,
    result: &'a ExperimentResult,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (experiment, result) = (self.experiment, self.result);
        let mut doc = serializer.serialize_map(None)?;
        doc.serialize_entry("name", &experiment.name)?;
        doc.serialize_entry("seed", &experiment.seed)?;
        doc.serialize_entry("replications", &experiment.replications)?;
        doc.serialize_entry("version", env!("CARGO_PKG_VERSION"))?;
        if let Some(d) = &experiment.description {
            doc.serialize_entry("description", d)?;
        }
        match &experiment.sweep {
            None => doc.serialize_entry("variants", &Variants(&result.points[0].variants))?,
            Some(sweep) => {
                doc.serialize_entry("variants", &json!([]))?;
                doc.serialize_entry(
                    "sweep",
                    &SweepDocument {
                        experiment,
                        result,
                        path: &sweep.path,
                        second: sweep
                            .second
                            .as_ref()
                            .map(|second| json!({"path": second.path, "values": second.values})),
                    },
                )?;
            }
        }
        doc.serialize_entry("events", &result.events)?;
        doc.end()
    }
}

/// A list of variants, each built as a `Value` when its turn comes.
struct Variants<'a>(&'a [VariantResult]);

impl Serialize for Variants<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for v in self.0 {
            seq.serialize_element(&variant_json(v))?;
        }
        seq.end()
    }
}

/// summary.json's `sweep` object.
struct SweepDocument<'a> {
    experiment: &'a Experiment,
    result: &'a ExperimentResult,
    path: &'a str,
    second: Option<Value>,
}

impl Serialize for SweepDocument<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut sweep = serializer.serialize_map(None)?;
        sweep.serialize_entry("path", self.path)?;
        if let Some(second) = &self.second {
            sweep.serialize_entry("second", second)?;
        }
        sweep.serialize_entry("points", &Points(self.experiment, self.result))?;
        sweep.end()
    }
}

/// The sweep's points, each built as a `Value` when its turn comes.
struct Points<'a>(&'a Experiment, &'a ExperimentResult);

impl Serialize for Points<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Points(experiment, result) = *self;
        let mut seq = serializer.serialize_seq(Some(result.points.len()))?;
        for (p, at) in result.points.iter().zip(&experiment.points) {
            let variants: Vec<Value> = p.variants.iter().map(variant_json).collect();
            seq.serialize_element(&match &at.second_value {
                None => json!({"value": p.value, "variants": variants}),
                Some(y) => json!({"value": p.value, "second_value": y, "variants": variants}),
            })?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{LoadOptions, Sweep, load_str};

    /// Streaming the document writes the bytes of the document built whole, with and without
    /// a sweep of one or two axes.
    #[test]
    fn summary_bytes_are_the_pretty_printed_document() {
        let text = r#"{"name": "s", "description": "a \"quoted\" one", "duration": "1s",
          "replications": 2,
          "clients": {"count": 3, "workload": {"open": {"rate_per_s": 20}}},
          "server": {"concurrency": 1, "error_rate": 0.3, "service_time": {"constant": "10ms"}},
          "policy": {"timeout": "50ms", "retry": {"max_attempts": 2}},
          "variants": [{"name": "a", "patch": {}},
                       {"name": "b", "patch": {"policy": {"retry": {"max_attempts": 3}}}}]}"#;
        let one = Sweep::new("clients.count", vec![1.into(), 2.into()]);
        let mut two = one.clone();
        two.second = Some(crate::scenario::Axis::new(
            "server.concurrency",
            vec![1.into(), 4.into()],
        ));
        for sweep in [None, Some(one), Some(two)] {
            let options = LoadOptions {
                sweep,
                ..LoadOptions::default()
            };
            let experiment = load_str(text, "s", &options).unwrap();
            let result = crate::runner::run(&experiment, 1, &|| {});
            let mut whole = serde_json::to_vec_pretty(&summary_json(&experiment, &result)).unwrap();
            whole.push(b'\n');
            assert!(summary_bytes(&experiment, &result).unwrap() == whole);
        }
    }
}
