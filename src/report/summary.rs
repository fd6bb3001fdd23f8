//! `summary.json`: the shape scripts rely on (docs/format.md and README.md), means with 95 % half-widths.

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
