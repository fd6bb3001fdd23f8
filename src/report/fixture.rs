//! A call graph's results made by hand, for the report's unit tests: a real single-server run
//! whose scenarios are given four services (frontend -> backend -> db, and frontend -> cache
//! for half the attempts) and whose results are given each service's and call's numbers and
//! load over time, scaled from the entry's. What the renderers see is shaped exactly as a
//! simulated call graph's results; the numbers are made up, but consistent.

use crate::metrics::{CallMetrics, Column, ServiceMetrics};
use crate::metrics::{ExperimentResult, ServiceSeries, VariantResult};
use crate::scenario::{Call, Experiment, LoadOptions, Scenario, Service, load_str};

/// The single-server scenario the graph is grown from: a stall from 10 s to 15 s, three
/// variants that retry differently.
pub(crate) const SCENARIO: &str = r#"{
  "name": "shop", "seed": 7, "replications": 3, "duration": "30s",
  "clients": {"count": 20, "workload": {"open": {"rate_per_s": 40}}},
  "server": {"concurrency": 4, "service_time": {"exponential": {"mean": "50ms"}},
             "faults": [{"from": "10s", "to": "15s", "concurrency": 0}]},
  "policy": {"timeout": "500ms", "retry": {"max_attempts": 1}},
  "metrics": {"bucket": "1s"},
  "variants": [
    {"name": "no retries", "patch": {}},
    {"name": "3 retries", "patch": {"policy": {"retry": {"max_attempts": 3}}}},
    {"name": "retries with a fallback", "patch": {"policy": {"retry": {"max_attempts": 2}}}}
  ]
}"#;

/// The services' names, the entry first.
pub(crate) const SERVICES: [&str; 4] = ["frontend", "backend", "cache", "db"];

/// The calls: (from, to, fraction), by caller then call order.
pub(crate) const CALLS: [(usize, usize, f64); 3] = [(0, 1, 1.0), (0, 2, 0.5), (1, 3, 1.0)];

/// How much each variant multiplies attempts at every hop below the entry.
const RETRY_FACTOR: [f64; 3] = [1.0, 2.2, 1.4];

/// The graph run of [`SCENARIO`] with `options` (a sweep, say).
pub(crate) fn graph_run(options: &LoadOptions) -> (Experiment, ExperimentResult) {
    let mut experiment = load_str(SCENARIO, "shop", options).expect("the fixture is valid");
    for point in &mut experiment.points {
        for v in &mut point.variants {
            grow(&mut v.scenario);
            // The variant named for it answers the calls to the cache that fail for good.
            if v.name.contains("fallback") {
                let to_cache = &mut v.scenario.services[0].calls[1].policy;
                to_cache.fallback = Some(crate::model::Dist::Constant(
                    crate::engine::SimDuration::from_millis(1),
                ));
            }
        }
    }
    let mut result = crate::runner::run(&experiment, 1, &|| {});
    for point in &mut result.points {
        for (j, v) in point.variants.iter_mut().enumerate() {
            decorate(v, RETRY_FACTOR[j % RETRY_FACTOR.len()], j);
        }
    }
    (experiment, result)
}

/// Gives a single-server scenario the fixture's services and calls.
pub(crate) fn grow(sc: &mut Scenario) {
    let server = sc.server().clone();
    // The entry keeps the scenario's faults; the services behind it have none.
    sc.services = SERVICES
        .iter()
        .enumerate()
        .map(|(i, name)| Service {
            name: name.to_string(),
            server: crate::scenario::Server {
                faults: if i == 0 {
                    server.faults.clone()
                } else {
                    crate::model::Faults::default()
                },
                ..server.clone()
            },
            calls: Vec::new(),
            parallel: false,
        })
        .collect();
    for (from, to, fraction) in CALLS {
        sc.services[from].calls.push(Call {
            to,
            fraction,
            policy: sc.policy.clone(),
            balancer: None,
            sticky: None,
        });
    }
}

/// Attempts per logical request at each service, for a variant whose hops multiply attempts
/// by `r` and whose entry sees `entry`.
fn amplification(entry: f64, r: f64) -> [f64; 4] {
    [entry, entry * r, entry * 0.5 * r, entry * r * r]
}

/// Fills a variant's graph numbers and series from its own.
fn decorate(v: &mut VariantResult, r: f64, j: usize) {
    let requests = v.metrics.requests;
    let amp = amplification(v.metrics.amplification, r);
    let ci = |x: f64| 0.03 * x;
    v.metrics.services = amp
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let attempts = requests * a;
            ServiceMetrics {
                attempts,
                amplification: *a,
                served: attempts * 0.95,
                wasted: attempts * 0.1 * (r - 1.0),
                rejected: attempts * 0.01 * i as f64,
                throttled: 0.0,
                expired_dropped: 0.0,
                goodput_per_s: requests * 0.9 / 30.0,
                utilization: (0.2 * a).min(1.0),
                max_queue: 10.0 * a * (i + 1) as f64,
                ..ServiceMetrics::default()
            }
        })
        .collect();
    v.ci95.services = v
        .metrics
        .services
        .iter()
        .map(|s| {
            let mut h = ServiceMetrics::default();
            for k in crate::metrics::ServiceMetric::ALL {
                k.set(&mut h, ci(k.value(s)));
            }
            h
        })
        .collect();
    v.metrics.calls = CALLS
        .iter()
        .enumerate()
        .map(|(e, &(from, to, fraction))| {
            let attempts = requests * amp[to];
            let calls = requests * amp[from] * fraction;
            let degraded = calls * 0.01 * j as f64;
            CallMetrics {
                calls,
                attempts,
                attempts_per_request: amp[to],
                retries: attempts - calls,
                succeeded: calls - degraded - 1.0,
                degraded,
                failed: degraded + 1.0,
                bulkhead_full: if j == 2 && e == 2 { 12.0 } else { 0.0 },
                route_success_rate: (fraction < 1.0 && from == 0).then_some(0.9),
                ..CallMetrics::default()
            }
        })
        .collect();
    v.ci95.calls = v
        .metrics
        .calls
        .iter()
        .map(|c| {
            let mut h = CallMetrics::default();
            for k in crate::metrics::CallMetric::ALL {
                k.set(&mut h, ci(k.value(c)));
            }
            h
        })
        .collect();
    let rate = 0.01 * j as f64;
    v.metrics.degraded_rate = Some(rate);
    v.ci95.degraded_rate = Some(0.002 * j as f64);
    v.metrics.degraded = requests * rate;
    v.ci95.degraded = ci(requests * rate);
    v.service_series = amp
        .iter()
        .map(|a| service_series(v, a / amp[0].max(1e-9)))
        .collect();
}

/// A service's load over time: the entry's, `k` times as much, and its answers' latency.
fn service_series(v: &VariantResult, k: f64) -> ServiceSeries {
    let rows = v
        .series
        .iter()
        .map(|row| {
            let mut out = [0.0; crate::metrics::series::COLUMNS];
            for c in [
                Column::Attempts,
                Column::Served,
                Column::Wasted,
                Column::QueueLen,
                Column::InService,
            ] {
                out[c as usize] = row[c as usize] * k;
            }
            out
        })
        .collect();
    ServiceSeries {
        bucket: v.bucket,
        rows,
        latency: v.latency.clone(),
    }
}
