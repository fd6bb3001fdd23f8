//! Every valid file either runs within its memory budget or is refused before it starts: the
//! cases that once took the process down, each refused at full size by `check` and `run` alike
//! (exit 2, nothing written), and run scaled down under a cap on the address space a little
//! above the estimate, so that an estimate that errs low fails here rather than on a user's
//! machine.

use std::path::Path;
use std::process::{Command, Output};

use retrystorm::scenario::{LoadOptions, load_str};
use serde_json::{Value, json};

/// Address space beyond the estimate a capped run may use: the binary, its libraries, thread
/// stacks and the allocator's arenas.
const OVERHEAD_KB: u64 = 768 * 1024;

/// `retrystorm ARGS` in `dir`, its address space capped at `cap_kb` when given.
fn retrystorm(dir: &Path, cap_kb: Option<u64>, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_retrystorm");
    let mut cmd = match cap_kb {
        Some(kb) => {
            let mut c = Command::new("sh");
            c.args(["-c", &format!("ulimit -v {kb} && exec \"$0\" \"$@\""), bin]);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(args).current_dir(dir).output().unwrap()
}

/// Writes `doc` as `name.json` in `dir`.
fn write(dir: &Path, name: &str, doc: &Value) -> String {
    let file = format!("{name}.json");
    std::fs::write(dir.join(&file), doc.to_string()).unwrap();
    file
}

/// `check` and `run` both refuse `doc` with exit 2, name `path` and the budget, and write
/// nothing.
fn refused(doc: &Value, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "big", doc);
    for args in [vec!["check", &file], vec!["run", &file, "--out", "out"]] {
        let out = retrystorm(dir.path(), None, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{path}: the run would take about"))
                && err.contains("more than limits.max_memory_mb = 4096")
                && err.contains("raise limits.max_memory_mb"),
            "{args:?}: {err}"
        );
    }
    assert!(!dir.path().join("out").exists(), "nothing written");
}

/// Runs `doc` on one thread with the address space capped at its estimate plus
/// [`OVERHEAD_KB`]; returns summary.json.
fn runs_capped(doc: &Value) -> Value {
    let experiment = load_str(&doc.to_string(), "test", &LoadOptions::default()).unwrap();
    let estimate = retrystorm::memory::estimate(&experiment, 1).total();
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "scaled", doc);
    let cap = estimate / 1024 + OVERHEAD_KB;
    let args = ["run", &file, "--out", "out", "--jobs", "1"];
    let out = retrystorm(dir.path(), Some(cap), &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "under {cap} KB: {err}");
    serde_json::from_slice(&std::fs::read(dir.path().join("out/summary.json")).unwrap()).unwrap()
}

/// A chain of `tiers` services, each calling the next, with a trickle of requests over
/// `duration`, time series in buckets of `bucket`, swept over `points` values.
fn chain(tiers: usize, points: usize, duration: &str, bucket: &str) -> Value {
    let mut services = serde_json::Map::new();
    for i in 0..tiers {
        let mut s = json!({"concurrency": 1, "service_time": {"constant": "1ms"}});
        if i + 1 < tiers {
            s["calls"] = json!([{"to": format!("s{}", i + 1), "policy": {"timeout": "10s"}}]);
        }
        services.insert(format!("s{i}"), s);
    }
    json!({
        "name": "chain", "duration": duration,
        "clients": {"count": 1, "entry": "s0", "workload": {"open": {"rate_per_s": 0.01}}},
        "services": services, "metrics": {"bucket": bucket},
        "sweep": {"path": "services.s0.concurrency", "values": (1..=points).collect::<Vec<_>>()}
    })
}

/// The reasons summary.json gives for its truncated replications (of its variants, or of
/// each sweep point's).
fn truncations(summary: &Value) -> Vec<String> {
    let points = summary["points"].as_array().cloned().unwrap_or_default();
    let variants = points
        .iter()
        .chain([summary])
        .flat_map(|p| p["variants"].as_array().cloned().unwrap_or_default());
    variants
        .flat_map(|v| v["truncated_replications"].as_array().cloned())
        .flatten()
        .map(|t| t["reason"].as_str().unwrap().to_string())
        .collect()
}

/// Regression: a 64-tier chain with one request and an 8-point sweep over 10^6 s in 1 s
/// buckets kept 65,536 rows per service per point and aborted out of memory.
#[test]
fn a_deep_chain_with_fine_buckets_is_refused_or_runs_within_its_estimate() {
    refused(&chain(64, 8, "1000000s", "1s"), "metrics.bucket");
    let summary = runs_capped(&chain(64, 2, "2000s", "1s"));
    assert!(truncations(&summary).is_empty());
}

/// An open workload against one fast server, with idempotency keys of `ttl` and
/// `max_in_flight`.
fn keys(rate: f64, ttl: &str, max_in_flight: u64) -> Value {
    json!({
        "name": "keys", "duration": "2s",
        "clients": {"count": 10, "workload": {"open": {"rate_per_s": rate}}},
        "server": {"concurrency": "unlimited", "service_time": {"constant": "1us"}},
        "policy": {"timeout": "1s", "idempotency_key": {"ttl": ttl}},
        "limits": {"max_in_flight": max_in_flight}
    })
}

/// Regression: remembered idempotency keys were outside `limits.max_in_flight`, so a long
/// ttl at a high rate grew until the process aborted. They count against it now, and the run
/// stops cleanly, truncated, as a storm does at the limit.
#[test]
fn remembered_keys_stop_the_run_at_max_in_flight() {
    let summary = runs_capped(&keys(100_000.0, "1000000s", 20_000));
    let reasons = truncations(&summary);
    assert!(!reasons.is_empty(), "truncated");
    assert!(
        reasons.iter().all(|r| r.contains("idempotency keys")),
        "{reasons:?}"
    );
    // A ttl that forgets as fast as calls come stays under the limit.
    let summary = runs_capped(&keys(100_000.0, "10ms", 20_000));
    assert!(truncations(&summary).is_empty());
}

/// Regression: unlimited attempts against a stall piled up repeats waiting for the key's
/// first attempt, without bound; the same file without keys stopped at the server's limit.
/// With keys, the waiting repeats count against `limits.max_in_flight` too.
#[test]
fn repeats_waiting_for_a_stalled_key_stop_the_run_at_max_in_flight() {
    let mut doc = json!({
        "name": "stall", "duration": "1s",
        "clients": {"count": 1, "workload": {"open": {"rate_per_s": 100}}},
        "server": {"concurrency": "unlimited", "service_time": {"constant": "1000s"}},
        "policy": {"timeout": "1ms", "idempotency_key": true,
                   "retry": {"max_attempts": "unlimited", "backoff": "none"}},
        "limits": {"max_in_flight": 5000}
    });
    let reasons = truncations(&runs_capped(&doc));
    assert!(
        !reasons.is_empty() && reasons.iter().all(|r| r.contains("idempotency keys")),
        "{reasons:?}"
    );
    doc["policy"]["idempotency_key"] = json!(false);
    let reasons = truncations(&runs_capped(&doc));
    assert!(
        !reasons.is_empty() && reasons.iter().all(|r| r.contains("the server held")),
        "{reasons:?}"
    );
}

/// Open clients with per-client adaptive throttles (and a per-client ratio budget).
fn throttled(count: u64, rate: f64, duration: &str) -> Value {
    json!({
        "name": "throttled", "duration": duration,
        "clients": {"count": count, "workload": {"open": {"rate_per_s": rate}}},
        "server": {"concurrency": 100, "service_time": {"constant": "1us"}},
        "policy": {"timeout": "1s", "adaptive_throttle": true,
                   "budget": {"scope": "per_client", "ratio": {"percent": 0.1, "window": "10s"}}}
    })
}

/// Regression: per-client state grows with every distinct client a run reaches; 2^32 - 1
/// clients with adaptive throttling aborted at 10^7 requests. The estimate counts the clients
/// a run can reach (no more than the requests it starts) and refuses what does not fit.
#[test]
fn per_client_state_is_refused_or_runs_within_its_estimate() {
    refused(
        &throttled(4_294_967_295, 10_000_000.0, "10s"),
        "clients.count",
    );
    let summary = runs_capped(&throttled(4_294_967_295, 100_000.0, "1s"));
    assert!(truncations(&summary).is_empty());
}

/// A sweep over `first` x 100 points of a trickle against one server.
fn wide_sweep(first: usize) -> Value {
    json!({
        "name": "wide", "duration": "1s",
        "clients": {"count": 1, "workload": {"open": {"rate_per_s": 1}}},
        "server": {"service_time": {"constant": "1ms"}},
        "sweep": {"path": "server.concurrency", "values": (1..=first).collect::<Vec<_>>(),
                  "second": {"path": "server.queue_limit", "values": (0..100).collect::<Vec<_>>()}}
    })
}

/// Regression: the largest sweep a file may have (100,000 scenarios) aborted at its end,
/// rendering what it kept. It is refused now; a twentieth of it runs within its estimate.
#[test]
fn the_largest_sweep_is_refused_and_a_smaller_one_runs_within_its_estimate() {
    refused(&wide_sweep(1000), "metrics.bucket");
    runs_capped(&wide_sweep(50));
}
