//! Server-side load shedding (docs/reference-results.md, "Load shedding"): CoDel and adaptive
//! LIFO end the HotOS stall's storm that backoff alone does not, in every replication; the
//! bundled load-shedding scenario shows fifo collapsing and the other three disciplines
//! holding, with CoDel answering the attempts it sheds `rejected`; and the `shed` count is
//! per service, absent where zero and `-` in a table for a server that cannot shed.

use retrystorm::scenario::LoadOptions;
use serde_json::Value;

use crate::cli::retrystorm;
use crate::{metric, run_bundled, run_text, scenario_path, variant};

#[test]
fn codel_and_adaptive_lifo_end_the_hotos_storm_in_every_replication() {
    let (experiment, result) = run_bundled("hotos-metastable", &LoadOptions::default());
    let n = f64::from(experiment.replications);
    assert_eq!(n, 20.0);
    // The same backoff without shedding, and no retry policy at all: the storm outlives the
    // stall in every replication.
    for name in ["no budget", "backoff"] {
        let v = variant(&result, name);
        assert_eq!(metric(v, "recovery.recovered").0, 0.0, "{name}");
        assert!(metric(v, "amplification").0 > 1.9, "{name}");
    }
    for name in ["backoff + CoDel", "backoff + adaptive LIFO"] {
        let v = variant(&result, name);
        assert_eq!(metric(v, "recovery.replications").0, n, "{name}");
        assert_eq!(
            metric(v, "recovery.recovered").0,
            n,
            "{name}: every replication"
        );
        // Back within the first 5 s window after the stall, in the slowest replication.
        assert!(metric(v, "recovery.max_recovery_s").0 <= 5.0, "{name}");
        // Near the 1 attempt per request of a healthy server, far from the storm's 2.
        assert!(metric(v, "amplification").0 < 1.2, "{name}");
        assert!(metric(v, "success_rate").0 > 0.95, "{name}");
    }
    // CoDel sheds at least the stall's backlog, about 280/s x 10 s of first attempts; adaptive
    // LIFO sheds nothing, and the others cannot.
    let codel = variant(&result, "backoff + CoDel");
    let (shed, half) = metric(codel, "server.shed");
    assert!(shed - half > 2800.0, "shed {shed} ± {half}");
    assert_eq!(codel.metrics.entry().shed, shed);
    for v in result.points[0]
        .variants
        .iter()
        .filter(|v| v.name != "backoff + CoDel")
    {
        assert_eq!(v.metrics.entry().shed, 0.0, "{}", v.name);
    }
}

fn summary_variant<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no variant {name}"))
}

fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |d, k| match k.parse::<usize>() {
        Ok(i) => &d[i],
        Err(_) => &d[k],
    })
}

fn num(v: &Value, path: &str) -> f64 {
    at(v, path)
        .as_f64()
        .unwrap_or_else(|| panic!("{}: no {path}", v["name"]))
}

#[test]
fn the_load_shedding_scenario_shows_fifo_collapse_and_the_others_hold() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("load-shedding");
    let out = retrystorm(
        dir.path(),
        &["run", file.to_str().unwrap(), "--out", "run", "--quiet"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/summary.json")).unwrap(),
    )
    .unwrap();
    let fifo = summary_variant(&summary, "FIFO");
    let lifo = summary_variant(&summary, "LIFO");
    let codel = summary_variant(&summary, "CoDel");
    let adaptive = summary_variant(&summary, "adaptive LIFO");
    // fifo: metastable in every replication, most of its work wasted, a queue of tens of
    // thousands.
    assert_eq!(num(fifo, "metrics.recovery.recovered_fraction"), 0.0);
    assert!(num(fifo, "metrics.services.0.wasted") > 0.5 * num(fifo, "metrics.services.0.served"));
    assert!(num(fifo, "metrics.services.0.max_queue") > 10_000.0);
    for v in [lifo, codel, adaptive] {
        assert_eq!(
            num(v, "metrics.recovery.recovered_fraction"),
            1.0,
            "{}",
            v["name"]
        );
        // Each succeeds for far more requests than fifo, beyond both intervals.
        assert!(
            num(v, "metrics.success_rate") - num(v, "ci95.success_rate")
                > num(fifo, "metrics.success_rate") + num(fifo, "ci95.success_rate") + 0.5,
            "{}",
            v["name"]
        );
    }
    // codel: every attempt is served or shed, none is served for nobody; the queue stays
    // short; a request fails only by rejections; successes stay faster than one timeout.
    let shed = num(codel, "metrics.services.0.shed");
    assert!(shed > 0.0);
    let attempts = num(codel, "metrics.attempts");
    assert!((num(codel, "metrics.services.0.served") + shed - attempts).abs() < 1e-9 * attempts);
    assert_eq!(num(codel, "metrics.services.0.wasted"), 0.0);
    assert!(num(codel, "metrics.services.0.max_queue") < 1000.0);
    let failed = at(codel, "metrics.failed").as_object().unwrap();
    let rejected = failed["rejected"].as_f64().unwrap();
    assert!(rejected > 0.0);
    for (outcome, n) in failed {
        assert!(
            outcome == "rejected" || n.as_f64() == Some(0.0),
            "{outcome}: {n}"
        );
    }
    assert!(num(codel, "metrics.success_latency_ms.p99") < 500.0);
    assert!(num(lifo, "metrics.success_latency_ms.p99") > 500.0);
    // adaptive_lifo sheds nothing: no `shed` in its summary (nor in fifo's or lifo's), and
    // its queue stands from the spike until the backlog drains, so it ends like lifo.
    for v in [fifo, lifo, adaptive] {
        assert!(at(v, "metrics.services.0.shed").is_null(), "{}", v["name"]);
        assert!(at(v, "ci95.services.0.shed").is_null(), "{}", v["name"]);
    }
    let (a, l) = (
        num(adaptive, "metrics.success_rate"),
        num(lifo, "metrics.success_rate"),
    );
    assert!(
        (a - l).abs() <= num(adaptive, "ci95.success_rate") + num(lifo, "ci95.success_rate"),
        "adaptive_lifo {a}, lifo {l}"
    );
    // The report: a shed column with `-` where the server cannot shed, and the finding.
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    let header = report
        .lines()
        .find(|l| l.starts_with("| variant |"))
        .unwrap();
    assert!(header.ends_with(" shed |"), "{header}");
    for name in ["FIFO", "LIFO", "adaptive LIFO"] {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap();
        assert!(row.ends_with(" - |"), "{row}");
    }
    assert!(report.contains(&format!(
        "the server shed {shed:.0} attempts ({:.1} % of those that reached it)",
        100.0 * shed / num(codel, "metrics.attempts")
    )));
}

/// A service's own `shed`: only the service with CoDel has one, and the per-service table
/// prints `-` for the others.
#[test]
fn a_service_with_codel_counts_what_it_shed() {
    let text = r#"{
      "name": "graph-shed", "seed": 5, "replications": 3, "duration": "6s",
      "clients": {"count": 10, "workload": {"open": {"rate_per_s": 300,
                  "profile": [{"at": "2s", "rate_per_s": 900}, {"at": "4s", "rate_per_s": 300}]}},
                  "entry": "frontend"},
      "services": {
        "frontend": {"concurrency": "unlimited", "service_time": {"constant": "1ms"},
                     "calls": [{"to": "backend", "policy": {"timeout": "300ms", "retry": {"max_attempts": 2}}}]},
        "backend": {"concurrency": 4, "service_time": {"exponential": {"mean": "8ms"}},
                    "discipline": "codel"}
      },
      "policy": {"timeout": "1s", "retry": {"max_attempts": 1}}
    }"#;
    let (_, result) = run_text(text);
    let v = variant(&result, "baseline");
    let (front, back) = (&v.metrics.services[0], &v.metrics.services[1]);
    assert_eq!(front.shed, 0.0);
    assert!(back.shed > 0.0);
    assert!(
        (back.served + back.shed - back.attempts).abs() < 1e-9 * back.attempts,
        "{back:?}"
    );
    // The entry service is not the one that sheds: the top-level count stays zero.
    assert_eq!(v.metrics.entry().shed, 0.0);
    let doc = serde_json::to_value(&v.metrics).unwrap();
    assert!(doc["services"][0].get("shed").is_none());
    assert!(doc["services"][1]["shed"].as_f64().unwrap() > 0.0);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.json"), text).unwrap();
    let out = retrystorm(dir.path(), &["run", "g.json", "--out", "run", "--quiet"]);
    assert!(out.status.success());
    let report = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    let header = report
        .lines()
        .find(|l| l.starts_with("| service |"))
        .unwrap();
    let col = header
        .split('|')
        .position(|c| c.trim() == "shed")
        .expect(header);
    let cell = |service: &str| {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {service}")))
            .unwrap();
        row.split('|').nth(col).unwrap().trim().to_string()
    };
    assert_eq!(cell("frontend"), "-");
    assert_ne!(cell("backend"), "-");
}
