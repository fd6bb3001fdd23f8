//! `sweep.csv`: a row per (sweep value, variant) with every metric's mean and 95 %
//! half-width, columns named by dotted paths into summary.json's `metrics` (the metric
//! registry's keys). A two-axis sweep has a column per swept setting, first axis first. Names
//! and sweep values go through [`csv_text`]. A call graph adds its own numbers after them
//! (`degraded`, `degraded_rate`, `services.<i>.<key>`, `calls.<i>.<key>`, indices as in
//! summary.json's `graph`).

use super::timeseries::format_number;
use crate::metrics::{ExperimentResult, VariantResult};
use crate::metrics::{leaves, part_leaves};
use crate::report::{csv_text, value_text};
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
        for (k, _) in all_leaves(v, false) {
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
                all_leaves(v, false).into_iter().collect();
            let halves: std::collections::HashMap<String, f64> =
                all_leaves(v, true).into_iter().collect();
            for n in &names {
                // A count left out where it is zero may have a mean and a zero half-width.
                let half = halves.get(n).or(means.get(n).map(|_| &0.0));
                for cell in [means.get(n), half] {
                    record.push(cell.map_or(String::new(), |x| format_number(*x)));
                }
            }
            w.write_record(&record)?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// Every (dotted key, value) of a variant's means (or half-widths): the metrics', then a call
/// graph's, with the degraded share right after the degraded count.
fn all_leaves(v: &VariantResult, half_widths: bool) -> Vec<(String, f64)> {
    let m = if half_widths { &v.ci95 } else { &v.metrics };
    let mut out = leaves(m);
    for (k, x) in part_leaves(m) {
        let degraded = k == "degraded";
        out.push((k, x));
        if let (true, Some(rate)) = (degraded, m.degraded_rate) {
            out.push(("degraded_rate".to_string(), rate));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::report::fixture::graph_run;
    use crate::scenario::{Axis, LoadOptions, Sweep};

    /// A swept call graph renders everything, and sweep.csv has the graph's columns with
    /// the numbers of summary.json.
    #[test]
    fn a_swept_call_graph_renders_and_sweep_csv_has_its_numbers() {
        let one = Sweep::new("clients.count", vec![10.into(), 20.into()]);
        let two = one
            .clone()
            .with_second(Axis::new("server.concurrency", vec![2.into(), 4.into()]));
        for sweep in [one, two] {
            let options = LoadOptions {
                sweep: Some(sweep),
                ..LoadOptions::default()
            };
            let (experiment, result) = graph_run(&options);
            let files = crate::output::render(&experiment, &result, Default::default(), 1).unwrap();
            let file = |name: &str| {
                files
                    .iter()
                    .find(|f| f.name == name)
                    .unwrap_or_else(|| panic!("no {name}"))
            };
            for name in [
                "call-graph.png",
                "service-load-over-time.png",
                "service-timeseries.csv",
            ] {
                file(name);
            }
            let mut reader = csv::Reader::from_reader(file("sweep.csv").bytes.as_slice());
            let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
            let at = |k: &str| {
                header
                    .iter()
                    .position(|h| h == k)
                    .unwrap_or_else(|| panic!("{k}"))
            };
            let (rate, db) = (at("degraded_rate"), at("services.3.amplification"));
            assert_eq!(rate, at("degraded.ci95") + 1);
            assert!(header.contains(&"calls.2.bulkhead_full.ci95".to_string()));
            let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
            let variants = result.points.iter().flat_map(|p| &p.variants);
            for (row, v) in rows.iter().zip(variants) {
                assert_eq!(
                    row[rate].parse::<f64>().unwrap(),
                    v.degraded_rate().unwrap().mean
                );
                assert_eq!(
                    row[db].parse::<f64>().unwrap(),
                    v.metrics.services[3].amplification
                );
            }
        }
    }
}
