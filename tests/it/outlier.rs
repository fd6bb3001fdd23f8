//! Outlier detection over a pool of replicas, as Envoy's consecutive-5xx detector
//! (`outlier_detection_impl.cc`): a crashed replica counted by hand, failure by failure and
//! ejection by ejection from the interval ticks; the share that may be ejected, Envoy's
//! rounding and `always_eject_one_host`; a replica that heals and whose ejection multiplier
//! decays; the panic threshold; the figure `report DIR` draws again; and the rules a file
//! must keep. Every expected value is derived here from the model, never from a run.

use crate::{assert_close, metric, run_text, variant};

/// Four replicas of 100 workers (1 ms of service: none ever waits), replica 0 crashed
/// (`outage: reject`, answered `error` at once) over `crash`, a random balancer, 40 requests
/// a second and no retries, no network delay, 10 replications; the clients' balancer ejects
/// after 5 consecutive 5xx for 30 s times the multiplier, ticks every 10 s.
fn crashed(crash: &str, duration: &str, variants: &str) -> String {
    format!(
        r#"{{
      "name": "outlier", "seed": 7, "replications": 10, "duration": "{duration}",
      "clients": {{ "count": 10, "workload": {{ "open": {{ "rate_per_s": 40 }} }} }},
      "server": {{ "concurrency": 100, "service_time": {{ "constant": "1ms" }},
                  "replicas": 4, "balancer": "random",
                  "faults": {crash},
                  "outlier_detection": {{ "consecutive_5xx": 5, "base_ejection_time": "30s",
                                          "max_ejection_percent": 25 }} }},
      "policy": {{ "retry": {{ "max_attempts": 1 }} }},
      "variants": {variants}
    }}"#
    )
}

/// The mean time from the start of a Poisson stream of 10 attempts a second at the crashed
/// replica (a quarter of 40/s) to its 5th: Gamma(5, 10/s), mean 0.5 s, variance 0.05 s^2.
const FIFTH: f64 = 0.5;
const FIFTH_VARIANCE: f64 = 0.05;

/// When a run of `duration` seconds ends: the answer to its last request, 1 ms after it
/// arrived, and the last of a Poisson stream of 40/s comes 1/40 s before the end on average.
fn end(duration: f64) -> f64 {
    duration - 1.0 / 40.0 + 0.001
}

/// Three standard errors of the mean over 10 replications of a sum of `k` fifths.
fn three_se(k: f64) -> f64 {
    3.0 * (k * FIFTH_VARIANCE / 10.0).sqrt()
}

/// A count that is the same in every replication: its mean, its 95 % half-width being 0
/// (left out of summary.json's `ci95`, as a zero is).
fn exact(v: &retrystorm::metrics::VariantResult, path: &str) -> f64 {
    let at = |doc: &retrystorm::metrics::Metrics| {
        let doc = serde_json::to_value(doc).unwrap();
        path.split('.')
            .try_fold(doc, |d, k| match k.parse::<usize>() {
                Ok(i) => d.get(i).cloned(),
                Err(_) => d.get(k).cloned(),
            })
            .and_then(|x| x.as_f64())
    };
    assert_eq!(
        at(&v.ci95).unwrap_or(0.0),
        0.0,
        "{path} differs between replications"
    );
    at(&v.metrics).unwrap_or_else(|| panic!("no metric {path}"))
}

/// Whether replica `k` of variant `v` has no `field` in summary.json (left out where zero).
fn absent(v: &retrystorm::metrics::VariantResult, k: usize, field: &str) -> bool {
    let doc = serde_json::to_value(&v.metrics).unwrap();
    doc["replicas"][k].get(field).is_none()
}

#[test]
fn a_crashed_replica_is_ejected_after_five_failures_and_again_each_time_it_returns() {
    let crash = r#"[{ "from": "0s", "to": "300s", "outage": "reject", "replica": 0 }]"#;
    let text = crashed(
        crash,
        "200s",
        r#"[
        { "name": "25 %", "patch": {} },
        { "name": "first 30 s", "patch": { "duration": "30s" } },
        { "name": "10 %", "patch": { "server": { "outlier_detection": {
            "max_ejection_percent": 10 } } } },
        { "name": "10 %, one host", "patch": { "server": { "outlier_detection": {
            "max_ejection_percent": 10, "always_eject_one_host": true } } } }
      ]"#,
    );
    let (_, result) = run_text(&text);
    // Every attempt at replica 0 fails, so the 5th it gets ejects it, at T1 (the 5th
    // arrival, about 0.5 s in). 25 % of 4 replicas allows one out: 100 x 1 / 4 <= 25.
    // A 30 s run ends before the first tick that could let it back (40 s): exactly 5
    // failures, one ejection, out from T1 to the end.
    let first = variant(&result, "first 30 s");
    assert_eq!(metric(first, "failed.error"), (5.0, 0.0));
    assert_eq!(exact(first, "replicas.0.ejections"), 1.0);
    let (out, _) = metric(first, "replicas.0.ejected_s");
    assert_close("ejected in 30 s", out, end(30.0) - FIFTH, three_se(1.0));
    // 200 s: multiplier 1 after T1 < 10 s, so out 30 s: the tick at 40 s lets it back (the
    // one at 30 s comes before T1 + 30). Its counts start over; 5 more failures eject it
    // at T2 = 40 s + a fifth, multiplier 2 (a tick that lets a replica back does not lower
    // its multiplier), 60 s: back at the 110 s tick. 5 more: T3 = 110 s + a fifth,
    // multiplier 3, 90 s, past the end. 15 failures, 3 ejections, in every replication;
    // out (40 - T1) + (110 - T2) + (end - T3) = end - three fifths.
    let v = variant(&result, "25 %");
    assert_eq!(metric(v, "failed.error"), (15.0, 0.0));
    assert_eq!(metric(v, "replicas.0.attempts"), (15.0, 0.0));
    assert_eq!(exact(v, "replicas.0.ejections"), 3.0);
    let (out, half) = metric(v, "replicas.0.ejected_s");
    let expected = end(200.0) - 3.0 * FIFTH;
    assert_close("ejected in 200 s", out, expected, three_se(3.0));
    assert!(half < 0.5, "the interval is that of three fifths: {half}");
    for k in 1..4 {
        assert!(absent(v, k, "ejections"), "replica {k} is never ejected");
    }
    // 10 % of 4: one out would be 25 % > 10 %, so none is, and replica 0 answers a quarter
    // of the 8000 requests `error`: a Poisson count of mean 2000 per replication, standard
    // deviation 44.7, 14.1 for a mean of 10.
    let capped = variant(&result, "10 %");
    assert!(absent(capped, 0, "ejections"));
    let (failed, _) = metric(capped, "failed.error");
    assert_close("failures with none ejected", failed, 2000.0, 3.0 * 14.1);
    // always_eject_one_host lets the first out whatever the share: as 25 %.
    let one = variant(&result, "10 %, one host");
    assert_eq!(metric(one, "failed.error"), (15.0, 0.0));
    assert_eq!(exact(one, "replicas.0.ejections"), 3.0);
}

#[test]
fn a_replica_that_heals_comes_back_and_its_multiplier_decays() {
    // Replica 0 crashed from 0 to 35 s and from 100 to 120 s. Ejected at T1 (a fifth in),
    // multiplier 1, 30 s: back at the 40 s tick, healthy. At the 50 s tick it has been back
    // an interval: its multiplier falls to 0. At 100 s it fails again; the 5th failure
    // ejects it at T2 = 100 s + a fifth, multiplier 1 again, 30 s: back at the 140 s tick,
    // healthy for good. 10 failures, 2 ejections, out (40 - T1) + (140 - T2) = 80 s - two
    // fifths. Had the multiplier stayed at 1, the second ejection would last 60 s, to the
    // 170 s tick: 30 s more.
    let crash = r#"[{ "from": "0s", "to": "35s", "outage": "reject", "replica": 0 },
                    { "from": "100s", "to": "120s", "outage": "reject", "replica": 0 }]"#;
    let text = crashed(crash, "200s", r#"[{ "name": "heals", "patch": {} }]"#);
    let (_, result) = run_text(&text);
    let v = variant(&result, "heals");
    assert_eq!(metric(v, "failed.error"), (10.0, 0.0));
    assert_eq!(exact(v, "replicas.0.ejections"), 2.0);
    let (out, _) = metric(v, "replicas.0.ejected_s");
    assert_close("ejected", out, 80.0 - 2.0 * FIFTH, three_se(2.0));
}

#[test]
fn a_pool_with_fewer_than_half_its_replicas_in_balances_over_all() {
    // Three replicas, 0 and 1 crashed, any share may be ejected. Once both are out, one of
    // three is in, under Envoy's 50 % panic threshold: the balancer ignores the ejections
    // and draws from all three, and two requests in three fail, as they do before any
    // ejection. (Between the two ejections half fail, for about 5 failures at 20/s: a
    // quarter of a second in each of the two ejection rounds of a 60 s run.) Both are
    // ejected, let back at the 40 s tick and ejected again: 2 ejections each.
    let text = r#"{
      "name": "panic", "seed": 5, "replications": 4, "duration": "60s",
      "clients": { "count": 10, "workload": { "open": { "rate_per_s": 40 } } },
      "server": { "concurrency": 100, "service_time": { "constant": "1ms" },
                  "replicas": 3, "balancer": "random",
                  "faults": [ { "from": "0s", "to": "100s", "outage": "reject", "replica": 0 },
                              { "from": "0s", "to": "100s", "outage": "reject", "replica": 1 } ],
                  "outlier_detection": { "max_ejection_percent": 100 } },
      "policy": { "retry": { "max_attempts": 1 } },
      "variants": [ { "name": "panic", "patch": {} } ]
    }"#;
    let (_, result) = run_text(text);
    let v = variant(&result, "panic");
    // 9600 requests in all: a binomial share's standard deviation is 0.0048.
    let (share, _) = metric(v, "failure_rate");
    assert_close("failure share in panic", share, 2.0 / 3.0, 3.0 * 0.0048);
    for k in 0..2 {
        let path = format!("replicas.{k}.ejections");
        assert_eq!(exact(v, &path), 2.0, "{path}");
    }
    assert!(absent(v, 2, "ejections"));
}

#[test]
fn the_ejections_figure_is_drawn_and_drawn_again_from_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let crash = r#"[{ "from": "0s", "to": "300s", "outage": "reject", "replica": 0 }]"#;
    let text = crashed(
        crash,
        "60s",
        r#"[{ "name": "detects", "patch": {} },
            { "name": "does not", "patch": { "server": { "outlier_detection": null } } }]"#,
    );
    let file = dir.path().join("outlier.json");
    std::fs::write(&file, text).unwrap();
    let first = dir.path().join("first");
    let run = crate::cli::retrystorm(
        dir.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--replications",
            "2",
            "--out",
            first.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = std::fs::read_to_string(first.join("ejections.csv")).unwrap();
    assert!(
        csv.starts_with("variant,bucket_start_s,bucket_s,ejected,trigger"),
        "{csv}"
    );
    // Only the variant that detects outliers has a panel: at 0.5 s it is out in both runs.
    assert!(csv.lines().skip(1).all(|l| l.starts_with("detects,")));
    let series = std::fs::read_to_string(first.join("timeseries.csv")).unwrap();
    assert!(
        series
            .lines()
            .next()
            .unwrap()
            .contains(",budget_level,ejected,p50_ms")
    );
    let report = std::fs::read_to_string(first.join("report.md")).unwrap();
    assert!(
        report.contains("| ejections | time ejected (s) |"),
        "{report}"
    );
    crate::cli::assert_report_re_renders(dir.path(), &first);
}

#[test]
fn outlier_detection_is_refused_with_its_path_rule_value_and_fix() {
    let problems = |server: &str| {
        let text = format!(
            r#"{{"name": "bad", "duration": "1s",
                "clients": {{"count": 1, "workload": {{"open": {{"rate_per_s": 1}}}}}},
                "server": {server}}}"#
        );
        match retrystorm::scenario::load_str(&text, "test", &Default::default()) {
            Ok(_) => panic!("{server} should be refused"),
            Err(e) => e.to_string(),
        }
    };
    let cases = [
        (
            r#"{"service_time": {"constant": "1ms"}, "outlier_detection": {}}"#,
            [
                "server.outlier_detection",
                "got replicas 1",
                "set \"replicas\" above 1",
            ],
        ),
        (
            r#"{"kind": "occ", "outlier_detection": {}}"#,
            ["server.outlier_detection", "queue server only", "occ"],
        ),
        (
            r#"{"service_time": {"constant": "1ms"}, "replicas": 2,
                "outlier_detection": {"base_ejection_time": "60s", "max_ejection_time": "30s"}}"#,
            [
                "server.outlier_detection.max_ejection_time",
                "at least base_ejection_time",
                "got 30s",
            ],
        ),
        (
            r#"{"service_time": {"constant": "1ms"}, "replicas": 2,
                "outlier_detection": {"max_ejection_percent": 101}}"#,
            [
                "server.outlier_detection.max_ejection_percent",
                "at most 100",
                "got 101",
            ],
        ),
        (
            r#"{"service_time": {"constant": "1ms"}, "replicas": 2,
                "outlier_detection": {"consecutive_5xx": 0}}"#,
            [
                "server.outlier_detection.consecutive_5xx",
                "at least 1",
                "got 0",
            ],
        ),
        (
            r#"{"service_time": {"constant": "1ms"}, "replicas": 2,
                "outlier_detection": {"interval": "0s"}}"#,
            [
                "server.outlier_detection.interval",
                "longer than zero",
                "0s",
            ],
        ),
    ];
    for (server, words) in cases {
        let said = problems(server);
        for w in words {
            assert!(said.contains(w), "{server}: {w:?} not in {said}");
        }
    }
    // The command line refuses such a file with exit status 2.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    std::fs::write(
        &file,
        r#"{"name": "bad", "duration": "1s",
            "clients": {"count": 1, "workload": {"open": {"rate_per_s": 1}}},
            "server": {"service_time": {"constant": "1ms"}, "outlier_detection": {}}}"#,
    )
    .unwrap();
    let out = crate::cli::retrystorm(dir.path(), &["check", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_resolved_scenario_writes_envoys_defaults() {
    let text = r#"{"name": "defaults", "duration": "1s",
        "clients": {"count": 1, "workload": {"open": {"rate_per_s": 1}}},
        "server": {"service_time": {"constant": "1ms"}, "replicas": 2,
                   "outlier_detection": {"base_ejection_time": "400s"}}}"#;
    let experiment =
        retrystorm::scenario::load_str(text, "test", &Default::default()).expect("valid");
    let doc = retrystorm::scenario::resolved_json(&experiment);
    let o = &doc["variants"][0]["scenario"]["server"]["outlier_detection"];
    assert_eq!(o["consecutive_5xx"], 5);
    assert_eq!(o["interval"], "10s");
    // max_ejection_time is 300 s or the base ejection time if that is longer.
    assert_eq!(o["max_ejection_time"], "400s");
    assert_eq!(o["max_ejection_percent"], 10);
    assert_eq!(o["always_eject_one_host"], false);
    assert!(o.get("consecutive_gateway_failure").is_none());
}
