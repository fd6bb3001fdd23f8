//! The questions the report asks of a variant before it shows something: can a request be
//! answered degraded, and are there calls below the entry. Every table, figure and sentence
//! that depends on the shape of a run asks one of these, here, rather than whether the run
//! "is a call graph": every run is a graph (a single server is one service called by the
//! clients), and what a renderer needs to know is what the data it is about to show holds.
//! Not here: which counts a policy can make at all ([`super::produces`]). Also here: whether a
//! variant's replications split with no trigger to count them ([`spread_split`]), which the
//! results, the sweep findings and the sweep figures all ask.

use crate::metrics::{Metric, VariantResult, t_quantile_975};
use crate::scenario::Scenario;

/// Whether a request of `scenario` can end degraded: some call of it has a fallback, which
/// answers a call that failed for good. Then the share of degraded requests has a column, and
/// the latency of "successful" requests is that of answered ones (a fallback's answer counts
/// with the successes), so tables and figures say "answered requests". Without a fallback
/// every answered request succeeded and the words are "successful requests".
pub(crate) fn can_degrade(scenario: &Scenario) -> bool {
    super::produces(&Metric::DEGRADED, scenario)
}

/// Whether `scenario` has calls: services below the entry, with their per-service and
/// per-call tables, the call-graph and service-load figures and per-service series. Without
/// calls the headline numbers are all there is to the one service.
pub(crate) fn has_calls(scenario: &Scenario) -> bool {
    scenario.has_calls()
}

/// Whether some service of `scenario` runs as a pool of more than one replica: then its
/// per-replica numbers and load over time are shown, the mean latency stands beside the
/// percentiles (the balancers' closed forms are means), and no closed form of one queue
/// applies.
pub(crate) fn has_replicas(scenario: &Scenario) -> bool {
    scenario.services.iter().any(|s| s.server.pool.replicas > 1)
}

/// Whether some of `scenarios` has replicas ([`has_replicas`]).
pub(crate) fn any_has_replicas<'a>(scenarios: impl IntoIterator<Item = &'a Scenario>) -> bool {
    scenarios.into_iter().any(has_replicas)
}

/// Whether a request can end degraded in some of `scenarios` ([`can_degrade`]): for the
/// words and columns that a whole table or figure shares.
pub(crate) fn any_can_degrade<'a>(scenarios: impl IntoIterator<Item = &'a Scenario>) -> bool {
    scenarios.into_iter().any(can_degrade)
}

/// Whether some of `scenarios` has calls ([`has_calls`]).
pub(crate) fn any_has_calls<'a>(scenarios: impl IntoIterator<Item = &'a Scenario>) -> bool {
    scenarios.into_iter().any(has_calls)
}

/// Whether variant `v`'s replications (`replications` of them) split into different
/// behaviours where no trigger tells them apart (report.md words it as `markdown::compare::SPLIT`). Within one behaviour a
/// replication's median over its thousands of requests moves by a fraction of itself; a
/// spread (standard deviation) larger than the median or mean latency of successes means some
/// replications ran many times slower than the others (tail-at-scale at 1,500 req/s: medians
/// of 2.4 ms, and 1.86 s in one replication). False with one replication, or where the
/// recovery analysis already counts a split.
pub(crate) fn spread_split(v: &VariantResult, replications: u32) -> bool {
    let (n, r) = (replications as usize, v.metrics.recovery);
    let counted = r.is_some_and(|r| r.recovered > 0.0 && r.recovered < r.replications);
    let spread = |k: Metric| {
        let (m, h) = k.estimate(&v.metrics, &v.ci95).unwrap_or_default();
        m > 0.0 && h * (n as f64).sqrt() / t_quantile_975(n - 1) > m
    };
    n > 1 && !counted && (spread(Metric::SUCCESS_P50) || spread(Metric::SUCCESS_MEAN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{LoadOptions, load_str};

    fn scenario(text: &str) -> Scenario {
        let experiment = load_str(text, "t", &LoadOptions::default()).unwrap();
        experiment.points[0].variants[0].scenario.clone()
    }

    /// Two tiers, `a` calling `b` with the given call policy.
    fn two_tiers(policy: &str) -> Scenario {
        scenario(&format!(
            r#"{{"name": "g", "duration": "1s",
              "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 10}}}}, "entry": "a"}},
              "services": {{
                "a": {{"service_time": {{"constant": "1ms"}}, "calls": [
                  {{"to": "b", "policy": {{{policy}}}}}]}},
                "b": {{"service_time": {{"constant": "1ms"}}}}}}}}"#
        ))
    }

    #[test]
    fn calls_without_a_fallback_cannot_degrade() {
        let s = two_tiers(r#""timeout": "10ms""#);
        assert!(has_calls(&s));
        assert!(
            !can_degrade(&s),
            "answered requests are the successful ones"
        );
    }

    #[test]
    fn a_fallback_on_any_call_can_degrade() {
        let s = two_tiers(r#""fallback": {"latency": {"constant": "1ms"}}"#);
        assert!(has_calls(&s) && can_degrade(&s));
    }

    #[test]
    fn a_single_server_has_no_calls_and_cannot_degrade() {
        let s = scenario(
            r#"{"name": "s", "duration": "1s",
              "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}},
              "server": {"service_time": {"constant": "1ms"}}}"#,
        );
        assert!(!has_calls(&s) && !can_degrade(&s));
        // A file's `services` with one service and no calls is the same run.
        let one = scenario(
            r#"{"name": "s", "duration": "1s",
              "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}, "entry": "a"},
              "services": {"a": {"service_time": {"constant": "1ms"}}}}"#,
        );
        assert!(!has_calls(&one) && !can_degrade(&one));
        assert!(!any_has_calls([&s, &one]) && !any_can_degrade([&s, &one]));
        assert!(!any_has_replicas([&s, &one]));
    }

    #[test]
    fn a_pool_of_replicas_behind_the_entry_or_a_call_has_replicas() {
        let pool = scenario(
            r#"{"name": "s", "duration": "1s",
              "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}},
              "server": {"service_time": {"constant": "1ms"}, "replicas": 2}}"#,
        );
        assert!(has_replicas(&pool) && !has_calls(&pool));
        let below = scenario(
            r#"{"name": "g", "duration": "1s",
              "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}, "entry": "a"},
              "services": {
                "a": {"service_time": {"constant": "1ms"}, "calls": [{"to": "b"}]},
                "b": {"service_time": {"constant": "1ms"}, "replicas": 3}}}"#,
        );
        assert!(has_replicas(&below));
        assert!(!has_replicas(&two_tiers(r#""timeout": "10ms""#)));
    }
}
