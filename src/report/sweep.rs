//! `sweep.csv`: a row per (sweep value, variant) with every metric's mean and 95 %
//! half-width, columns named by dotted paths into summary.json's `metrics` (the metric
//! registry's keys). A two-axis sweep has a column per swept setting, first axis first. Names
//! and sweep values go through [`csv_text`].

use super::timeseries::format_number;
use super::{csv_text, value_text};
use crate::metrics::leaves;
use crate::runner::ExperimentResult;
use crate::scenario::Experiment;

/// Renders sweep.csv for a run with a sweep (empty columns of swept values without one).
pub fn sweep_csv(experiment: &Experiment, result: &ExperimentResult) -> anyhow::Result<Vec<u8>> {
    let sweep = experiment.sweep.as_ref();
    let mut w = csv::Writer::from_writer(Vec::new());
    // Every metric any variant has: some keys appear only at some points (the recovery
    // times when a replication recovered), and a row leaves the ones it lacks empty.
    let mut names: Vec<String> = Vec::new();
    for v in result.points.iter().flat_map(|p| &p.variants) {
        let mut after = 0;
        for (k, _) in leaves(&v.metrics) {
            match names.iter().position(|n| *n == k) {
                Some(i) => after = i + 1,
                None => {
                    names.insert(after, k);
                    after += 1;
                }
            }
        }
    }
    let mut header = vec![sweep.map_or(String::new(), |s| csv_text(&s.path).into_owned())];
    if let Some(second) = sweep.and_then(|s| s.second.as_ref()) {
        header.push(csv_text(&second.path).into_owned());
    }
    header.push("variant".to_string());
    for n in &names {
        header.push(n.clone());
        header.push(format!("{n}.ci95"));
    }
    w.write_record(&header)?;
    for (point, at) in result.points.iter().zip(&experiment.points) {
        let text = |v: Option<&serde_json::Value>| csv_text(&value_text(v)).into_owned();
        let mut values = vec![text(point.value.as_ref())];
        if at.second_value.is_some() {
            values.push(text(at.second_value.as_ref()));
        }
        for v in &point.variants {
            let mut record = values.clone();
            record.push(csv_text(&v.name).into_owned());
            let means: std::collections::HashMap<String, f64> =
                leaves(&v.metrics).into_iter().collect();
            let halves: std::collections::HashMap<String, f64> =
                leaves(&v.ci95).into_iter().collect();
            for n in &names {
                for cell in [means.get(n), halves.get(n)] {
                    record.push(cell.map_or(String::new(), |x| format_number(*x)));
                }
            }
            w.write_record(&record)?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}
