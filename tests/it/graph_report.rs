//! A call graph's output end to end: summary.json names the services and calls and holds a
//! number for each, the per-service series add up to the per-service counts, the top-level
//! numbers are the entry's, the shares of success, degraded and failure add up, the figures
//! and their CSVs are there, the table and report.md show each service and call, results do
//! not depend on the thread count, and `report DIR` re-renders the folder byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::retrystorm;

/// Clients -> frontend -> backend (every attempt) and -> cache (for 40 % of requests); the
/// backend stalls for 3 s. The variants retry on the calls, add a fallback, and add a
/// bulkhead with a fallback.
const GRAPH: &str = r#"{
  "name": "graph",
  "seed": 11,
  "replications": 4,
  "duration": "12s",
  "clients": {"count": 20, "workload": {"open": {"rate_per_s": 60}}, "entry": "frontend"},
  "services": {
    "frontend": {
      "concurrency": 16,
      "service_time": {"exponential": {"mean": "2ms"}},
      "calls": [
        {"to": "backend", "fraction": 1, "policy": {"timeout": "150ms", "retry": {"max_attempts": 1}}},
        {"to": "cache", "fraction": 0.4, "policy": {"timeout": "50ms", "retry": {"max_attempts": 1}}}
      ]
    },
    "backend": {
      "concurrency": 4,
      "service_time": {"exponential": {"mean": "10ms"}},
      "faults": [{"from": "4s", "to": "7s", "concurrency": 0}]
    },
    "cache": {"concurrency": 4, "service_time": {"constant": "1ms"}}
  },
  "policy": {"timeout": "1s", "retry": {"max_attempts": 2}},
  "metrics": {"bucket": "500ms"},
  "variants": [
    {"name": "no call retries", "patch": {}},
    {"name": "call retries", "patch": {"services": {"frontend": {"calls": [
      {"to": "backend", "fraction": 1, "policy": {"timeout": "150ms", "retry": {"max_attempts": 3}}},
      {"to": "cache", "fraction": 0.4, "policy": {"timeout": "50ms", "retry": {"max_attempts": 3}}}
    ]}}}},
    {"name": "fallback and bulkhead", "patch": {"services": {"frontend": {"calls": [
      {"to": "backend", "fraction": 1, "policy": {"timeout": "150ms", "retry": {"max_attempts": 3},
        "bulkhead": {"max_concurrent": 4, "max_wait": "10ms"},
        "fallback": {"latency": {"constant": "1ms"}}, "propagate_deadline": true}},
      {"to": "cache", "fraction": 0.4, "policy": {"timeout": "50ms", "retry": {"max_attempts": 3}}}
    ]}}}}
  ]
}"#;

/// Writes the scenario into `dir` and runs it into `dir/<out>` with `extra` flags; returns the
/// output folder and stdout.
fn run(dir: &Path, out: &str, extra: &[&str]) -> (PathBuf, String) {
    let file = dir.join("graph.json");
    std::fs::write(&file, GRAPH).unwrap();
    let folder = dir.join(out);
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--out",
        folder.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = retrystorm(dir, &args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (folder, String::from_utf8_lossy(&output.stdout).into_owned())
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every file of a folder but the manifest, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

#[test]
fn a_call_graph_run_names_and_counts_every_service_and_call() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout) = run(dir.path(), "o", &[]);
    let summary = json(&out.join("summary.json"));
    let variants = summary["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 3);
    for v in variants {
        let name = v["name"].as_str().unwrap();
        assert_eq!(
            v["graph"]["services"],
            serde_json::json!([
                {"name": "frontend", "entry": true},
                {"name": "backend", "entry": false},
                {"name": "cache", "entry": false}
            ]),
            "{name}"
        );
        assert_eq!(
            v["graph"]["calls"],
            serde_json::json!([
                {"from": "frontend", "to": "backend", "fraction": 1.0},
                {"from": "frontend", "to": "cache", "fraction": 0.4}
            ]),
            "{name}"
        );
        let m = &v["metrics"];
        for doc in ["metrics", "ci95"] {
            assert_eq!(v[doc]["services"].as_array().unwrap().len(), 3, "{name}");
            assert_eq!(v[doc]["calls"].as_array().unwrap().len(), 2, "{name}");
        }
        // The top-level numbers are the clients' and the entry's.
        let entry = &m["services"][0];
        assert!(
            (f(&entry["attempts"]) - f(&m["attempts"])).abs() < 1e-9,
            "{name}"
        );
        assert!(
            (f(&entry["amplification"]) - f(&m["amplification"])).abs() < 1e-9,
            "{name}"
        );
        // Success, degraded and failure shares add up (nothing is left in flight).
        let total = f(&m["success_rate"]) + f(&m["degraded_rate"]) + f(&m["failure_rate"]);
        assert!((total - 1.0).abs() < 1e-9, "{name}: {total}");
        // The cache is called for 40 % of requests: fewer attempts than the backend.
        let per_request = |i: usize| f(&m["services"][i]["amplification"]);
        assert!(per_request(2) < per_request(1), "{name}");
    }
    let m = |i: usize| &variants[i]["metrics"];
    // Retries on the calls multiply the backend's load during its stall.
    assert!(
        f(&m(1)["services"][1]["amplification"]) > f(&m(0)["services"][1]["amplification"]),
        "call retries send the backend more attempts per request"
    );
    // The fallback answers calls that failed: requests end degraded, and the bulkhead turns
    // some attempts away.
    assert_eq!(f(&m(0)["degraded"]), 0.0);
    assert!(f(&m(2)["degraded"]) > 0.0);
    assert!(f(&m(2)["calls"][0]["bulkhead_full"]) > 0.0);
    // Each service's series adds up to its attempts (means of totals are totals of means).
    let mut reader = csv::Reader::from_path(out.join("service-timeseries.csv")).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let at = |k: &str| header.iter().position(|h| h == k).unwrap();
    let mut sums: BTreeMap<(String, String), f64> = BTreeMap::new();
    for r in reader.records().map(Result::unwrap) {
        *sums
            .entry((r[at("variant")].to_string(), r[at("service")].to_string()))
            .or_default() += r[at("attempts")].parse::<f64>().unwrap();
    }
    for v in variants {
        for (i, service) in ["frontend", "backend", "cache"].iter().enumerate() {
            let key = (v["name"].as_str().unwrap().to_string(), service.to_string());
            let expected = f(&v["metrics"]["services"][i]["attempts"]);
            assert!(
                (sums[&key] - expected).abs() <= 1e-6 * expected.max(1.0),
                "{key:?}: {} vs {expected}",
                sums[&key]
            );
        }
    }
    // Figures and their data.
    for name in [
        "call-graph.png",
        "call-graph.csv",
        "service-load-over-time.png",
        "service-load-over-time.csv",
    ] {
        assert!(out.join(name).exists(), "{name}");
    }
    let mut reader = csv::Reader::from_path(out.join("call-graph.csv")).unwrap();
    assert_eq!(
        reader.records().count(),
        3 * 3,
        "the clients' arrow and two calls each"
    );
    // The table and report.md show each service and call.
    assert!(stdout.contains("degraded %"), "{stdout}");
    assert!(
        stdout.contains("\nper service") && stdout.contains("\nper call"),
        "{stdout}"
    );
    assert!(stdout.contains("frontend → cache"), "{stdout}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for text in [
        "### Per service",
        "### Per call",
        "| backend |",
        "| frontend → backend |",
        "Call graph: the clients send their requests to **frontend**",
        "![",
    ] {
        assert!(report.contains(text), "report.md lacks {text:?}");
    }
}

#[test]
fn a_call_graph_is_the_same_whatever_the_threads_and_re_renders_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (one, _) = run(dir.path(), "one", &["--quiet", "--jobs", "1"]);
    let (three, _) = run(dir.path(), "three", &["--quiet", "--jobs", "3"]);
    let before = files(&one);
    assert!(
        before == files(&three),
        "results depend on the thread count"
    );
    let output = retrystorm(dir.path(), &["report", "one"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let after = files(&one);
    for (name, bytes) in &before {
        assert!(after.get(name) == Some(bytes), "{name} changed");
    }
    assert_eq!(after.len(), before.len());
}

#[test]
fn a_swept_call_graph_runs_and_re_renders() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run(
        dir.path(),
        "swept",
        &[
            "--quiet",
            "--replications",
            "2",
            "--sweep",
            "services.backend.concurrency=2,4",
        ],
    );
    let summary = json(&out.join("summary.json"));
    let points = summary["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        for v in p["variants"].as_array().unwrap() {
            assert_eq!(v["metrics"]["services"].as_array().unwrap().len(), 3);
        }
    }
    let sweep = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let header = sweep.lines().next().unwrap();
    assert!(header.contains(",services.1.amplification,"), "{header}");
    assert!(header.contains(",degraded_rate,"), "{header}");
    let before = files(&out);
    let output = retrystorm(dir.path(), &["report", "swept"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(files(&out) == before, "report DIR changed the folder");
}
