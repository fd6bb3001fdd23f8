//! `summary.json` as one type, [`Summary`]: written by `run`, read back by `report DIR`, and
//! the shape scripts rely on (docs/format.md and README.md), means with 95 % half-widths.
//!
//! Every variant names its services and calls (`graph`), in the order of its
//! `metrics.services` and `metrics.calls`: a single server is a graph of one service, the
//! entry, and no calls. The document borrows the results it describes, so writing a sweep of
//! many points copies no metrics; read back, it owns them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::metrics::{ExperimentResult, VariantResult};
use crate::metrics::{Metrics, TruncatedReplication};
use crate::scenario::{Experiment, Scenario, Variant};

/// summary.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary<'a> {
    /// The scenario's name.
    pub name: Cow<'a, str>,
    /// The master seed.
    pub seed: u64,
    /// Replications of every variant at every sweep value.
    pub replications: u32,
    /// The retrystorm version that wrote the file (absent from folders written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Cow<'a, str>>,
    /// What the scenario models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// The variants without a sweep; empty with one (each point has its own).
    pub variants: Vec<VariantSummary<'a>>,
    /// The sweep's points, if the run has a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSummary<'a>>,
    /// Events processed over all replications.
    #[serde(default)]
    pub events: u64,
}

/// A point of summary.json: its sweep value, second value and variants.
pub type SummaryPoint<'a> = (Option<Value>, Option<Value>, Vec<VariantSummary<'a>>);

/// summary.json's `sweep`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSummary<'a> {
    /// The first axis' dotted keys.
    pub path: Cow<'a, str>,
    /// The second axis of a two-axis sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second: Option<AxisSummary<'a>>,
    /// Every point, first axis outer.
    pub points: Vec<PointSummary<'a>>,
}

/// The second axis of a two-axis sweep: its dotted keys and values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSummary<'a> {
    /// Dotted keys.
    pub path: Cow<'a, str>,
    /// The values, in order.
    pub values: Cow<'a, [Value]>,
}

/// One sweep point: its values and its variants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointSummary<'a> {
    /// The first axis' value.
    pub value: Cow<'a, Value>,
    /// The second axis' value, with two axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_value: Option<Cow<'a, Value>>,
    /// The variants, in file order.
    pub variants: Vec<VariantSummary<'a>>,
}

/// One variant's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSummary<'a> {
    /// The variant's name.
    pub name: Cow<'a, str>,
    /// The services and calls by name.
    pub graph: GraphNames<'a>,
    /// Means over replications.
    pub metrics: Cow<'a, Metrics>,
    /// 95 % half-widths, same shape.
    pub ci95: Cow<'a, Metrics>,
    /// Replications that stopped early, with the reason (absent when none did).
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    pub truncated_replications: Cow<'a, [TruncatedReplication]>,
}

/// A run's services and calls by name, in the order of `metrics.services` and
/// `metrics.calls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphNames<'a> {
    /// The services, the entry first.
    pub services: Vec<ServiceName<'a>>,
    /// The calls, by caller then call order.
    pub calls: Vec<CallName<'a>>,
    /// The groups of clients by name, in the order of `metrics.groups`, where the clients
    /// form more than one group (absent for one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Cow<'a, str>>,
}

/// A service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceName<'a> {
    /// Its name.
    pub name: Cow<'a, str>,
    /// Whether the clients call it.
    pub entry: bool,
    /// Its replicas, when it has more than one (their numbers are `metrics.replicas`, in
    /// service order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
}

/// A call of one service to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallName<'a> {
    /// The calling service.
    pub from: Cow<'a, str>,
    /// The called service.
    pub to: Cow<'a, str>,
    /// Share of the caller's attempts that make the call.
    pub fraction: f64,
}

impl<'a> Summary<'a> {
    /// The summary of a finished run, borrowing its results.
    pub fn of(experiment: &'a Experiment, result: &'a ExperimentResult) -> Self {
        let (variants, sweep) = match &experiment.sweep {
            None => (
                variants(&result.points[0].variants, &experiment.points[0].variants),
                None,
            ),
            Some(sweep) => {
                // The experiment's points are the results' points, in the same order; they
                // also know the second axis' value.
                let points = result
                    .points
                    .iter()
                    .zip(&experiment.points)
                    .map(|(p, at)| PointSummary {
                        value: Cow::Borrowed(p.value.as_ref().unwrap_or(&Value::Null)),
                        second_value: at.second_value.as_ref().map(Cow::Borrowed),
                        variants: variants(&p.variants, &at.variants),
                    })
                    .collect();
                let sweep = SweepSummary {
                    path: Cow::Borrowed(&sweep.path),
                    second: sweep.second.as_ref().map(|second| AxisSummary {
                        path: Cow::Borrowed(&second.path),
                        values: Cow::Borrowed(&second.values),
                    }),
                    points,
                };
                (Vec::new(), Some(sweep))
            }
        };
        Summary {
            name: Cow::Borrowed(&experiment.name),
            seed: experiment.seed,
            replications: experiment.replications,
            version: Some(Cow::Borrowed(env!("CARGO_PKG_VERSION"))),
            description: experiment.description.as_deref().map(Cow::Borrowed),
            variants,
            sweep,
            events: result.events,
        }
    }

    /// Every point's variants, in order: the sweep's points, or the one point without one.
    pub fn points(&self) -> Vec<&[VariantSummary<'a>]> {
        match &self.sweep {
            None => vec![&self.variants],
            Some(sweep) => sweep.points.iter().map(|p| &p.variants[..]).collect(),
        }
    }

    /// Every point as (value, second value, variants), in order: the sweep's points, or the
    /// one point (without values) without one.
    pub fn into_points(self) -> Vec<SummaryPoint<'a>> {
        match self.sweep {
            None => vec![(None, None, self.variants)],
            Some(sweep) => sweep
                .points
                .into_iter()
                .map(|p| {
                    let second = p.second_value.map(Cow::into_owned);
                    (Some(p.value.into_owned()), second, p.variants)
                })
                .collect(),
        }
    }
}

/// The summaries of `results`, which ran `ran`.
fn variants<'a>(results: &'a [VariantResult], ran: &'a [Variant]) -> Vec<VariantSummary<'a>> {
    results
        .iter()
        .zip(ran)
        .map(|(v, r)| VariantSummary {
            name: Cow::Borrowed(&v.name),
            graph: GraphNames::of(&r.scenario),
            metrics: Cow::Borrowed(&v.metrics),
            ci95: Cow::Borrowed(&v.ci95),
            truncated_replications: Cow::Borrowed(&v.truncations),
        })
        .collect()
}

impl<'a> GraphNames<'a> {
    /// The names of `scenario`'s services and calls.
    pub fn of(scenario: &'a Scenario) -> Self {
        let services = scenario
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| ServiceName {
                name: Cow::Borrowed(&s.name),
                entry: i == 0,
                replicas: (s.server.pool.replicas > 1).then_some(s.server.pool.replicas),
            })
            .collect();
        let name = |i: usize| scenario.services.get(i).map_or("", |s| s.name.as_str());
        let calls = scenario
            .services
            .iter()
            .flat_map(|s| {
                s.calls.iter().map(|c| CallName {
                    from: Cow::Borrowed(&s.name),
                    to: Cow::Borrowed(name(c.to)),
                    fraction: c.fraction,
                })
            })
            .collect();
        let groups = if scenario.has_groups() {
            scenario
                .clients
                .iter()
                .map(|g| Cow::Borrowed(g.name.as_str()))
                .collect()
        } else {
            Vec::new()
        };
        GraphNames {
            services,
            calls,
            groups,
        }
    }
}

/// summary.json's bytes: [`Summary::of`] pretty-printed with a final newline.
pub fn summary_bytes(
    experiment: &Experiment,
    result: &ExperimentResult,
) -> serde_json::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(&Summary::of(experiment, result))?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::LoadOptions;
    use serde_json::json;

    #[test]
    fn a_call_graph_names_its_services_and_calls_and_gives_the_degraded_share() {
        let (experiment, result) = crate::report::fixture::graph_run(&LoadOptions::default());
        let bytes = summary_bytes(&experiment, &result).unwrap();
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
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
        // Read back, the document is the one written.
        let back: Summary = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, Summary::of(&experiment, &result));
    }
}
