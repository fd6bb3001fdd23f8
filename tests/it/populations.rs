//! Mixed client populations: `clients` as a list of named groups, each with its workload and,
//! optionally, its own policy. Each group's numbers against closed forms, a list of one group
//! against the object form, each group's arrivals as a stream of its own, variant patches and
//! sweeps into the list, the rules of a list (exit 2 with path, rule, value and fix) and the
//! bundled `mixed-clients` scenario.

use retrystorm::scenario::{LoadOptions, load_str};
use serde_json::Value;

use crate::cli::retrystorm;
use crate::{metric, run_bundled, run_text, variant};

/// Two groups against a server of unlimited workers whose every attempt fails `error` with
/// probability `q`, independently of everything: group "a" calls with the top-level policy
/// (3 attempts, retrying errors at once), group "b" with one of its own (1 attempt).
fn two_groups(q: f64) -> String {
    format!(
        r#"{{
  "name": "two-groups", "seed": 5, "replications": 8, "duration": "10s",
  "clients": [
    {{ "name": "a", "count": 20, "workload": {{ "open": {{ "rate_per_s": 400 }} }} }},
    {{ "name": "b", "count": 5, "workload": {{ "open": {{ "rate_per_s": 400 }} }},
      "policy": {{ "retry": {{ "max_attempts": 1 }} }} }}
  ],
  "server": {{ "concurrency": "unlimited", "service_time": {{ "constant": "1ms" }}, "error_rate": {q} }},
  "policy": {{ "retry": {{ "max_attempts": 3, "retry_on": ["error"], "backoff": "none" }} }}
}}"#
    )
}

/// A request of at most `m` attempts, each failing independently with probability `q`,
/// makes K attempts with P(K = k) = q^(k-1) (1 - q) for k < m and P(K = m) = q^(m-1):
/// E[K] = 1 + q + ... + q^(m-1), and Var[K] = E[K^2] - E[K]^2.
fn attempts_mean_var(q: f64, m: i32) -> (f64, f64) {
    let p = |k: i32| {
        if k < m {
            q.powi(k - 1) * (1.0 - q)
        } else {
            q.powi(m - 1)
        }
    };
    let mean: f64 = (1..=m).map(|k| f64::from(k) * p(k)).sum();
    let square: f64 = (1..=m).map(|k| f64::from(k * k) * p(k)).sum();
    (mean, square - mean * mean)
}

/// Each group's success and attempts per request follow its own policy: with failures
/// independent with probability q, a group of 3 attempts succeeds with 1 - q^3 and makes
/// 1 + q + q^2 attempts per request; a group of 1 attempt succeeds with 1 - q and makes
/// exactly 1. Tolerances are 3 standard errors of the pooled requests (binomial for the
/// success, the attempts' own variance for attempts per request); the per-replication
/// ratios are averaged over replications of nearly equal size, whose mean differs from the
/// pooled ratio by far less.
#[test]
fn each_group_succeeds_and_retries_as_its_own_policy_says() {
    let q = 0.3;
    let (experiment, result) = run_text(&two_groups(q));
    let reps = f64::from(experiment.replications);
    let v = &result.points[0].variants[0];
    assert_eq!(v.metrics.groups.len(), 2);
    for (i, m) in [(0usize, 3), (1, 1)] {
        let (requests, _) = metric(v, &format!("groups.{i}.requests"));
        let n = requests * reps;
        assert!(n > 30_000.0, "group {i}: {n} requests");
        let p = 1.0 - q.powi(m);
        let (success, _) = metric(v, &format!("groups.{i}.success_rate"));
        let se = (p * (1.0 - p) / n).sqrt();
        crate::assert_close(&format!("group {i} success"), success, p, 3.0 * se);
        let (mean, var) = attempts_mean_var(q, m);
        let (attempts, _) = metric(v, &format!("groups.{i}.attempts_per_request"));
        crate::assert_close(
            &format!("group {i} attempts per request"),
            attempts,
            mean,
            3.0 * (var / n).sqrt(),
        );
    }
    // A group of one attempt makes exactly one per request, in every replication.
    assert_eq!(metric(v, "groups.1.attempts_per_request"), (1.0, 0.0));
    // The totals are over both groups: every request ended in one of them.
    let total = metric(v, "requests").0;
    let by_group = metric(v, "groups.0.requests").0 + metric(v, "groups.1.requests").0;
    crate::assert_close("requests over the groups", by_group, total, 1e-6 * total);
    // Latency of the answers: constant service, no network: 1 ms per attempt.
    let (p50, _) = metric(v, "groups.1.latency_ms.p50");
    crate::assert_close("group b median latency (ms)", p50, 1.0, 0.01);
}

/// The file of `two_groups` with only group "a", written three ways.
fn one_group(form: &str) -> String {
    let workload = r#""count": 20, "workload": { "open": { "rate_per_s": 400 } }"#;
    let policy = r#"{ "timeout": "5ms", "retry": { "max_attempts": 3, "retry_on": ["error", "timeout"], "backoff": { "base": "1ms", "cap": "20ms", "jitter": "full" } }, "budget": { "scope": "shared", "token_bucket": { "max_tokens": 10, "token_ratio": 0.1 } } }"#;
    let (clients, top) = match form {
        "object" => (
            format!("{{ {workload} }}"),
            format!(r#", "policy": {policy}"#),
        ),
        "list" => (
            format!(r#"[ {{ "name": "only", {workload} }} ]"#),
            format!(r#", "policy": {policy}"#),
        ),
        _ => (
            format!(r#"[ {{ "name": "only", {workload}, "policy": {policy} }} ]"#),
            String::new(),
        ),
    };
    format!(
        r#"{{ "name": "one-group", "seed": 9, "replications": 3, "duration": "5s",
  "clients": {clients},
  "network": {{ "latency": {{ "exponential": {{ "mean": "1ms" }} }} }},
  "server": {{ "concurrency": 4, "service_time": {{ "exponential": {{ "mean": "9ms" }} }}, "error_rate": 0.05 }}{top} }}"#
    )
}

/// A list of one group runs exactly as the same group written as an object, whether it calls
/// with the top-level policy or with the same policy as its own: the first group draws from
/// the arrival stream a single group always drew from. Every file of the run is byte for
/// byte the same but the resolved scenario (which writes the list as it was written) and
/// the manifest that hashes it. The setup (a shared budget, timeouts near the service time,
/// jittered backoff) makes every stream and policy matter.
#[test]
fn a_list_of_one_group_runs_exactly_as_the_object_form() {
    let files = |form: &str| {
        let (experiment, result) = run_text(&one_group(form));
        let doc = serde_json::to_value(retrystorm::output::Summary::of(&experiment, &result));
        let doc: Value = doc.unwrap();
        let v = &doc["variants"][0];
        assert!(v["graph"].get("groups").is_none(), "{form}: {}", v["graph"]);
        assert!(v["metrics"].get("groups").is_none(), "{form}");
        assert!(v["metrics"]["budget_denials"].as_f64().unwrap() > 0.0);
        assert!(v["metrics"]["timeouts"].as_f64().unwrap() > 0.0);
        let files = retrystorm::output::render(
            &experiment,
            &result,
            retrystorm::report::ImageFormat::Svg,
            1,
        )
        .unwrap();
        files
            .into_iter()
            .filter(|f| f.name != "scenario.resolved.json" && f.name != "manifest.json")
            .map(|f| (f.name, f.bytes))
            .collect::<Vec<_>>()
    };
    let object = files("object");
    assert!(object.iter().any(|(name, _)| name == "summary.json"));
    assert!(object.iter().any(|(name, _)| name == "report.md"));
    for form in ["list", "own policy"] {
        let other = files(form);
        assert_eq!(other.len(), object.len(), "{form}");
        for ((name, a), (other_name, b)) in object.iter().zip(&other) {
            assert_eq!(name, other_name);
            assert!(a == b, "{form}: {name} differs");
        }
    }
}

/// Each group's open workload is a Poisson stream of its own: changing group "b"'s rate
/// leaves group "a"'s requests exactly as they were, replication by replication.
#[test]
fn one_groups_rate_changes_nothing_of_anothers_arrivals() {
    let text = two_groups(0.0).replace(
        r#""replications": 8,"#,
        r#""replications": 4, "variants": [{"name": "slow b", "patch": {}}, {"name": "fast b", "patch": {"clients": {"b": {"workload": {"open": {"rate_per_s": 900}}}}}}],"#,
    );
    let (_, result) = run_text(&text);
    let (slow, fast) = (variant(&result, "slow b"), variant(&result, "fast b"));
    assert_eq!(
        metric(slow, "groups.0.requests"),
        metric(fast, "groups.0.requests")
    );
    // Group b's own count did change (about 4000 against 9000 requests a replication).
    assert!(metric(fast, "groups.1.requests").0 > 2.0 * metric(slow, "groups.1.requests").0);
}

/// A variant's patch reaches a group of the list by its name and leaves the others; `null`
/// gives a group the top-level policy back by removing its own; a sweep reaches a group by
/// its index. The scenarios are read back from what loaded, not from a run.
#[test]
fn patches_reach_groups_by_name_and_sweeps_by_index() {
    let text = two_groups(0.1).replace(
        r#""replications": 8,"#,
        r#""replications": 1,
  "variants": [{"name": "base", "patch": {}},
               {"name": "b retries", "patch": {"clients": {"b": {"policy": null, "count": 7}}}},
               {"name": "no b", "patch": {"clients": {"b": null}}}],
  "sweep": {"path": "clients.0.count", "values": [2, 3]},"#,
    );
    let experiment = load_str(&text, "t", &LoadOptions::default()).unwrap();
    assert_eq!(experiment.points.len(), 2);
    for (point, a_count) in experiment.points.iter().zip([2, 3]) {
        let [base, retries, no_b] = &point.variants[..] else {
            panic!("three variants");
        };
        let groups = |v: &retrystorm::scenario::Variant| {
            v.scenario
                .clients
                .iter()
                .map(|g| {
                    (
                        g.name.clone(),
                        g.count,
                        v.scenario.group_policy(g).retry.max_attempts,
                        g.policy.is_some(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            groups(base),
            [
                ("a".into(), a_count, Some(3), false),
                ("b".into(), 5, Some(1), true)
            ]
        );
        assert_eq!(
            groups(retries),
            [
                ("a".into(), a_count, Some(3), false),
                ("b".into(), 7, Some(3), false)
            ]
        );
        assert_eq!(groups(no_b), [("a".into(), a_count, Some(3), false)]);
    }
}

/// A patch that names no group, and one that writes a group's setting the sweep sets, are
/// refused with the variant's path.
#[test]
fn a_patch_into_the_groups_is_checked_like_any_other() {
    let with = |patch: &str, sweep: &str| {
        two_groups(0.1).replace(
            r#""replications": 8,"#,
            &format!(r#""variants": [{{"name": "v", "patch": {patch}}}], {sweep}"#),
        )
    };
    let e = load_str(
        &with(r#"{"clients": {"c": {"count": 2}}}"#, ""),
        "t",
        &LoadOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("variants[0].patch.clients.c"), "{e}");
    assert!(e.contains("names no group of clients"), "{e}");
    assert!(e.contains(r#"the groups are "a", "b""#), "{e}");
    let e = load_str(
        &with(
            r#"{"clients": {"b": {"count": 2}}}"#,
            r#""sweep": {"path": "clients.1.count", "values": [1, 2]},"#,
        ),
        "t",
        &LoadOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("variants[0]"), "{e}");
    assert!(e.contains("clients.1.count"), "{e}");
}

/// Runs `retrystorm check` on `text`: exit 2, and stderr says each of `needles`.
fn refused(text: &str, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.json"), text).unwrap();
    let out = retrystorm(dir.path(), &["check", "s.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "message lacks {n:?}:\n{stderr}");
    }
}

#[test]
fn duplicate_group_names_are_refused() {
    refused(
        &two_groups(0.1).replace(r#""name": "b""#, r#""name": "a""#),
        &[
            "clients[1].name",
            "must be unique among the groups",
            r#"got "a""#,
            "rename one",
        ],
    );
}

#[test]
fn an_empty_list_of_groups_is_refused() {
    let text = two_groups(0.1);
    let start = text.find(r#""clients": ["#).unwrap();
    let end = text.find(r#""server""#).unwrap();
    let empty = format!(r#"{}"clients": [], {}"#, &text[..start], &text[end..]);
    refused(
        &empty,
        &[
            "clients:",
            "must list at least one group",
            "got []",
            "write one group as an object",
        ],
    );
}

#[test]
fn a_group_without_a_name_is_refused() {
    refused(
        &two_groups(0.1).replace(r#""name": "b", "#, ""),
        &["clients[1].name", "is required", "name the group"],
    );
}

/// An entry that names no service, and groups that name different entries, are refused at
/// the group's path.
#[test]
fn a_bad_entry_is_refused() {
    let graph = |entries: [&str; 2]| {
        format!(
            r#"{{ "name": "g", "duration": "1s",
  "clients": [
    {{ "name": "a", "count": 1, "workload": {{ "open": {{ "rate_per_s": 10 }} }}, "entry": "{}" }},
    {{ "name": "b", "count": 1, "workload": {{ "open": {{ "rate_per_s": 10 }} }}, "entry": "{}" }}
  ],
  "services": {{ "front": {{ "service_time": {{ "constant": "1ms" }}, "calls": [{{ "to": "back" }}] }},
                 "back": {{ "service_time": {{ "constant": "1ms" }} }} }} }}"#,
            entries[0], entries[1]
        )
    };
    refused(
        &graph(["front", "back"]),
        &[
            "clients[1].entry",
            r#"got "back""#,
            r#"clients[0].entry is "front""#,
            "leave entry out",
        ],
    );
    refused(
        &graph(["frnt", "frnt"]),
        &["clients[0].entry", "names no service", r#""frnt""#],
    );
    // Both naming the same entry is fine.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.json"), graph(["front", "front"])).unwrap();
    let out = retrystorm(dir.path(), &["check", "s.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A single group written as an object calls with the top-level policy: a `policy` of its
/// own there is refused.
#[test]
fn a_policy_in_the_object_form_is_refused() {
    refused(
        r#"{ "name": "p", "duration": "1s",
  "clients": { "count": 1, "workload": { "open": { "rate_per_s": 10 } }, "policy": { "timeout": "1s" } },
  "server": { "service_time": { "constant": "1ms" } } }"#,
        &[
            "clients.policy",
            "belongs to a group in a list of groups",
            "move it to",
        ],
    );
}

/// mixed-clients.json: 90 % of the traffic behind a shared budget, 10 % retrying six times
/// without one. The stall's timeouts spend the budget, which refills only on successes, so
/// the 90 % stop retrying; the 10 % make all six attempts, as every attempt after the stall
/// times out: 700 x (0.9 x 1 + 0.1 x 6) = 1050 attempts/s against 1000 served, so the storm
/// lasts to the end and nothing that arrives from the stall on (t = 10 s of 30) succeeds. A
/// request before it makes one attempt and succeeds, one after it fails: the expected
/// success is 1/3 in both groups, and the 10 % make 1/3 x 1 + 2/3 x 6 = 13/3 attempts per
/// request. The tolerances are 3 standard errors over the pooled requests, from the binomial
/// share p = 1/3 of requests before the stall (attempts: 5 x that share's, as K = 6 - 5 x
/// [before]). With the 10 % under the top-level policy too (a budget of their own, shared
/// among them), 700 x 1 < 1000 and the server recovers in every replication.
#[test]
fn mixed_clients_the_unbudgeted_tenth_keeps_the_storm_going() {
    let (experiment, result) = run_bundled("mixed-clients", &LoadOptions::default());
    let reps = f64::from(experiment.replications);
    let mixed = &result.points[0].variants[0];
    let budgeted = variant(&result, "all budgeted");
    let p: f64 = 1.0 / 3.0;
    for g in 0..2 {
        let n = metric(mixed, &format!("groups.{g}.requests")).0 * reps;
        let se = (p * (1.0 - p) / n).sqrt();
        let (success, _) = metric(mixed, &format!("groups.{g}.success_rate"));
        crate::assert_close(&format!("group {g} success"), success, p, 3.0 * se);
        if g == 1 {
            let (attempts, _) = metric(mixed, "groups.1.attempts_per_request");
            crate::assert_close(
                "unbudgeted attempts",
                attempts,
                p + (1.0 - p) * 6.0,
                15.0 * se,
            );
        }
    }
    // The 90 %'s bucket of 10 tokens lets a retry through only above half full: the stall's
    // first timeouts, of the first attempts of many requests waiting at once, take it to 9,
    // 8, 7 and 6 with a retry each, then to 5 and below, where none goes out, and nothing
    // succeeds to refill it: 4 retries a replication. (The ratio is a mean over replications
    // of 4 / requests, which vary by about 1 %.)
    let (attempts, _) = metric(mixed, "groups.0.attempts_per_request");
    let requests = metric(mixed, "groups.0.requests").0;
    crate::assert_close("the 90 %'s retries", (attempts - 1.0) * requests, 4.0, 0.1);
    let recovered = |v| metric(v, "recovery.recovered_fraction").0;
    assert_eq!(
        recovered(mixed),
        0.0,
        "the mixed population stays collapsed"
    );
    assert_eq!(recovered(budgeted), 1.0, "all budgeted recovers");
    assert!(metric(budgeted, "groups.0.success_rate").0 > 0.8);
}

/// A shared budget is shared within a group: two groups that both call with the top-level
/// policy have a bucket each. Against an outage that answers every attempt `error` at once
/// (no network delay), a request's attempts all fail before the next request arrives. A gRPC
/// token bucket of 10 tokens (a failure takes one, a retry goes out only while more than 5
/// are left) then sees: the first request fails at 9 (retry), 8 (retry) and 7 (its third and
/// last attempt); the second at 6 (retry) and 5 (denied); nothing succeeds to refill it.
/// That is 3 retries per bucket: 3 for one group, 6 for two, in every replication.
#[test]
fn a_shared_budget_is_shared_within_its_group() {
    let text = |clients: &str| {
        format!(
            r#"{{ "name": "shared", "replications": 3, "duration": "2s",
  "clients": {clients},
  "server": {{ "service_time": {{ "constant": "1ms" }},
              "faults": [ {{ "from": "0s", "to": "2s", "outage": "reject" }} ] }},
  "policy": {{ "retry": {{ "max_attempts": 3, "backoff": "none" }},
              "budget": {{ "scope": "shared", "token_bucket": {{ "max_tokens": 10, "token_ratio": 0.1 }} }} }} }}"#
        )
    };
    let open = r#""workload": { "open": { "rate_per_s": 100 } }"#;
    let (_, one) = run_text(&text(&format!(r#"{{ "count": 10, {open} }}"#)));
    let (_, two) = run_text(&text(&format!(
        r#"[ {{ "name": "a", "count": 5, {open} }}, {{ "name": "b", "count": 5, {open} }} ]"#
    )));
    assert_eq!(metric(&one.points[0].variants[0], "retries"), (3.0, 0.0));
    assert_eq!(metric(&two.points[0].variants[0], "retries"), (6.0, 0.0));
}
