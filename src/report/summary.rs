//! `summary.json`: the shape scripts rely on (docs/format.md and README.md), means with 95 % half-widths.
//!
//! A call graph's variant also names its services and calls (`graph`), in the order of its
//! `metrics.services` and `metrics.calls`, and gives the share of requests a fallback
//! answered (`metrics.degraded_rate`) beside their count; a single server's variant has
//! neither, so its summary is what it always was.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};

use crate::runner::{ExperimentResult, VariantResult};
use crate::scenario::{Experiment, Scenario, Variant};

/// The summary document.
pub fn summary_json(experiment: &Experiment, result: &ExperimentResult) -> Value {
    let variants = |vs: &[VariantResult], ran: &[Variant]| -> Vec<Value> {
        vs.iter()
            .zip(ran)
            .map(|(v, r)| variant_json(v, &r.scenario))
            .collect()
    };
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
            doc["variants"] = json!(variants(
                &result.points[0].variants,
                &experiment.points[0].variants
            ));
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
                    None => {
                        json!({"value": p.value, "variants": variants(&p.variants, &at.variants)})
                    }
                    Some(y) => json!({
                        "value": p.value,
                        "second_value": y,
                        "variants": variants(&p.variants, &at.variants),
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

fn variant_json(v: &VariantResult, scenario: &Scenario) -> Value {
    let mut out = json!({"name": v.name});
    if scenario.is_graph() {
        out["graph"] = graph_json(scenario);
    }
    let rate = v.degraded_rate;
    out["metrics"] = with_degraded_rate(json!(v.metrics), rate.map(|e| e.mean));
    out["ci95"] = with_degraded_rate(json!(v.ci95), rate.map(|e| e.half_width));
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

/// A call graph's services and calls by name, in the order of `metrics.services` and
/// `metrics.calls`: `{"services": [{"name", "entry"}], "calls": [{"from", "to", "fraction"}]}`.
pub(super) fn graph_json(scenario: &Scenario) -> Value {
    let services: Vec<Value> = scenario
        .services
        .iter()
        .enumerate()
        .map(|(i, s)| json!({"name": s.name, "entry": i == 0}))
        .collect();
    let name = |i: usize| scenario.services.get(i).map_or("", |s| s.name.as_str());
    let calls: Vec<Value> = scenario
        .services
        .iter()
        .flat_map(|s| {
            s.calls
                .iter()
                .map(|c| json!({"from": s.name, "to": name(c.to), "fraction": c.fraction}))
        })
        .collect();
    json!({"services": services, "calls": calls})
}

/// A metrics (or ci95) document with `degraded_rate` right after `degraded`, when the variant
/// has one. The share is folded apart from [`crate::metrics::Metrics`] (see
/// [`VariantResult::degraded_rate`]) and read back apart by `report DIR`.
fn with_degraded_rate(doc: Value, rate: Option<f64>) -> Value {
    let (Value::Object(map), Some(rate)) = (&doc, rate) else {
        return doc;
    };
    let mut out = serde_json::Map::new();
    for (k, v) in map {
        out.insert(k.clone(), v.clone());
        if k == "degraded" {
            out.insert(DEGRADED_RATE.to_string(), json!(rate));
        }
    }
    if !out.contains_key(DEGRADED_RATE) {
        out.insert(DEGRADED_RATE.to_string(), json!(rate));
    }
    Value::Object(out)
}

/// The key of the degraded share in a variant's `metrics` and `ci95`.
pub(super) const DEGRADED_RATE: &str = "degraded_rate";

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
            None => doc.serialize_entry(
                "variants",
                &Variants(&result.points[0].variants, &experiment.points[0].variants),
            )?,
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

/// A list of variants (with the scenarios they ran), each built as a `Value` when its turn
/// comes.
struct Variants<'a>(&'a [VariantResult], &'a [Variant]);

impl Serialize for Variants<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (v, ran) in self.0.iter().zip(self.1) {
            seq.serialize_element(&variant_json(v, &ran.scenario))?;
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
            let variants: Vec<Value> = p
                .variants
                .iter()
                .zip(&at.variants)
                .map(|(v, ran)| variant_json(v, &ran.scenario))
                .collect();
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

    #[test]
    fn a_call_graph_names_its_services_and_calls_and_gives_the_degraded_share() {
        let (experiment, result) = super::super::fixture::graph_run(&LoadOptions::default());
        let doc = summary_json(&experiment, &result);
        let v = &doc["variants"][1];
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "graph", "metrics", "ci95"]);
        assert_eq!(
            v["graph"]["services"],
            json!([
                {"name": "frontend", "entry": true},
                {"name": "backend", "entry": false},
                {"name": "cache", "entry": false},
                {"name": "db", "entry": false}
            ])
        );
        assert_eq!(
            v["graph"]["calls"][1],
            json!({"from": "frontend", "to": "cache", "fraction": 0.5})
        );
        for doc in ["metrics", "ci95"] {
            let m = v[doc].as_object().unwrap();
            let at = |k: &str| m.keys().position(|x| x == k).unwrap();
            assert_eq!(at("degraded_rate"), at("degraded") + 1, "{doc}");
            assert_eq!(m["services"].as_array().unwrap().len(), 4);
            assert_eq!(m["calls"].as_array().unwrap().len(), 3);
        }
        assert_eq!(v["metrics"]["degraded_rate"], json!(0.01));
        let mut whole = serde_json::to_vec_pretty(&doc).unwrap();
        whole.push(b'\n');
        assert!(summary_bytes(&experiment, &result).unwrap() == whole);
    }
}
