//! `sweep.csv`: a row per (sweep value, variant) with every metric's mean and 95 %
//! half-width, columns named by dotted paths into summary.json's `metrics`.

use serde_json::Value;

use super::timeseries::format_number;
use crate::runner::ExperimentResult;

/// The leaves of a metrics document as (dotted path, number), in document order.
pub fn flatten(doc: &Value) -> Vec<(String, f64)> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, f64)>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&path, child, out);
                }
            }
            Value::Number(n) => out.push((prefix.to_string(), n.as_f64().unwrap_or(0.0))),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", doc, &mut out);
    out
}

/// Renders sweep.csv for a run with a sweep.
pub fn sweep_csv(path: &str, result: &ExperimentResult) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let first = &result.points[0].variants[0];
    let names: Vec<String> = flatten(&first.metrics)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let mut header = vec![path.to_string(), "variant".to_string()];
    for n in &names {
        header.push(n.clone());
        header.push(format!("{n}.ci95"));
    }
    w.write_record(&header)?;
    for point in &result.points {
        let value = super::value_text(point.value.as_ref());
        for v in &point.variants {
            let mut record = vec![value.clone(), v.name.clone()];
            let halves = flatten(&v.ci95);
            for ((_, mean), (_, half)) in flatten(&v.metrics).iter().zip(&halves) {
                record.push(format_number(*mean));
                record.push(format_number(*half));
            }
            w.write_record(&record)?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}
