//! `policy.envoy_config`: an Envoy route's `retry_policy` and its cluster's `circuit_breakers`
//! read from Envoy YAML. The expected settings below come from Envoy's API reference and
//! docs/format.md section 7, not from a run: a policy read from a file runs exactly as the
//! same policy written by hand (and a bare `retry_on: 5xx` exactly as the `envoy` preset),
//! Envoy's defaults fill what the file leaves out, the route and cluster are looked up by
//! name, and each way a file can be wrong stops the run with exit code 2 and a message that
//! names the scenario's JSON path, the file, the path inside it, the rule and the fix.

use std::path::Path;

use retrystorm::engine::SimDuration;
use retrystorm::metrics::VariantResult;
use retrystorm::model::{Backoff, BudgetKind, EnvoyLimit, Outcome};
use retrystorm::scenario::{Experiment, LoadOptions, Policy, load_file, load_str, resolved_json};

use crate::cli::retrystorm;
use crate::variant;

/// A bootstrap of two routes on one virtual host (whose retry policy "plain" inherits) and
/// two clusters, one with a retry budget beside max_retries and a HIGH entry first.
const BOOTSTRAP: &str = r#"
static_resources:
  listeners:
  - name: ingress
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          route_config:
            virtual_hosts:
            - name: shop
              domains: ["*"]
              retry_policy: { retry_on: gateway-error, num_retries: 4 }
              routes:
              - name: cart
                match: { prefix: "/cart" }
                route:
                  cluster: cart
                  timeout: 2s
                  retry_policy:
                    retry_on: "5xx,retriable-status-codes,connect-failure"
                    retriable_status_codes: [429, 404]
                    num_retries: 2
                    per_try_timeout: 0.05s
                    retry_back_off: { base_interval: 0.002s, max_interval: 0.0085s }
              - name: plain
                match: { prefix: "/" }
                route: { cluster: plain }
  clusters:
  - name: cart
    circuit_breakers:
      thresholds:
      - { priority: HIGH, max_retries: 100 }
      - priority: DEFAULT
        max_retries: 7
        max_connections: 100
        retry_budget: { budget_percent: { value: 25.0 }, min_retry_concurrency: 5 }
      - { priority: DEFAULT, max_retries: 1 }
  - name: plain
"#;

/// One client, 1000 requests/s for 20 s against a server that fails a share `q` of its
/// attempts after 1 ms and rate-limits above 900/s, with `policy`.
fn scenario(q: f64, policy: &str) -> String {
    format!(
        r#"{{
  "name": "envoy", "seed": 11, "replications": 2, "duration": "20s",
  "clients": {{ "count": 4, "workload": {{ "open": {{ "rate_per_s": 1000 }} }} }},
  "network": {{ "latency": {{ "constant": "0ms" }} }},
  "server": {{ "concurrency": 2, "service_time": {{ "exponential": {{ "mean": "1ms" }} }}, "error_rate": {q},
              "rate_limit": {{ "rate_per_s": 900, "burst": 50 }} }},
  "policy": {policy}
}}"#
    )
}

/// Writes `config` as configs/envoy.yaml and `scenario` beside its folder, and loads it.
fn load(dir: &Path, config: &str, scenario: &str) -> Result<Experiment, String> {
    std::fs::create_dir_all(dir.join("configs")).unwrap();
    std::fs::write(dir.join("configs/envoy.yaml"), config).unwrap();
    std::fs::write(dir.join("scenario.json"), scenario).unwrap();
    load_file(&dir.join("scenario.json"), &LoadOptions::default()).map_err(|e| e.to_string())
}

/// The `envoy_config` object naming configs/envoy.yaml with `more` keys.
fn named(more: &str) -> String {
    format!(r#"{{ "envoy_config": {{ "file": "configs/envoy.yaml"{more} }} }}"#)
}

/// The policy `policy` reads from `config`.
fn policy_of(config: &str, policy: &str) -> Policy {
    let dir = tempfile::tempdir().unwrap();
    let e = load(dir.path(), config, &scenario(0.1, policy)).unwrap();
    e.points[0].variants[0].scenario.policy.clone()
}

/// The summary metrics of `a` and `b`, run.
fn same_run(a: &Experiment, b: &Experiment) {
    let ra = retrystorm::runner::run(a, 0, &|| {});
    let rb = retrystorm::runner::run(b, 0, &|| {});
    let json = |v: &VariantResult| serde_json::to_string(&v.metrics).unwrap();
    assert_eq!(
        json(variant(&ra, "baseline")),
        json(variant(&rb, "baseline"))
    );
}

#[test]
fn a_route_read_from_a_bootstrap_runs_as_the_same_policy_written_by_hand() {
    // num_retries 2: 3 attempts; 5xx is timeout, error, rejected; 429 in
    // retriable_status_codes is throttled (404 matches nothing); Envoy's backoff cut to whole
    // ms as Envoy cuts it: 2 ms and 8 ms; per_try_timeout 0.05s; the route timeout 2s the
    // deadline; the first DEFAULT thresholds' retry budget (25 %, 5) in place of max_retries.
    let by_hand = r#"{ "timeout": "50ms", "deadline": "2s",
        "retry": { "max_attempts": 3, "retry_on": ["timeout", "error", "rejected", "throttled"],
                   "backoff": { "envoy": { "base_interval": "2ms", "max_interval": "8ms" } },
                   "retry_after": "ignore" },
        "budget": { "retry_budget": { "budget_percent": 25, "min_retry_concurrency": 5 } } }"#;
    for q in [0.05, 0.3] {
        let dir = tempfile::tempdir().unwrap();
        let a = load(
            dir.path(),
            BOOTSTRAP,
            &scenario(q, &named(r#", "route": "cart""#)),
        )
        .unwrap();
        let b = load_str(&scenario(q, by_hand), "test", &LoadOptions::default()).unwrap();
        same_run(&a, &b);
    }
}

#[test]
fn a_bare_retry_on_5xx_runs_as_the_envoy_preset() {
    // Envoy's defaults: num_retries 1, backoff 25 ms to 250 ms, no route and so no deadline,
    // no circuit breakers and so max_retries 3.
    for file in [
        "retry_policy: { retry_on: 5xx }\n",
        "retry_policy:\n  retry_on: 5xx\ncircuit_breakers: {}\n",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let a = load(dir.path(), file, &scenario(0.2, &named(""))).unwrap();
        let b = load_str(
            &scenario(0.2, r#"{ "preset": "envoy" }"#),
            "test",
            &LoadOptions::default(),
        )
        .unwrap();
        same_run(&a, &b);
    }
}

#[test]
fn what_the_file_leaves_out_is_envoys_default() {
    // The route "plain" has no retry_policy of its own: its virtual host's applies
    // (gateway-error: rejected and timeout, num_retries 4); no route timeout: 15 s; its
    // cluster has no circuit breakers: max_retries 3.
    let p = policy_of(BOOTSTRAP, &named(r#", "route": "plain""#));
    assert_eq!(p.retry.max_attempts, Some(5));
    assert!(p.retry.retry_on.contains(Outcome::Rejected));
    assert!(!p.retry.retry_on.contains(Outcome::Error));
    assert_eq!(p.deadline, Some(SimDuration::from_secs(15)));
    assert_eq!(p.timeout, None);
    let b = p.budget.unwrap();
    assert!(
        matches!(b.kind, BudgetKind::Envoy(EnvoyLimit::MaxRetries(3))),
        "{b:?}"
    );
    let words = p.read_from.unwrap();
    assert!(words.contains("the virtual host's retry_policy"), "{words}");
    assert!(words.contains("(Envoy's default)"), "{words}");
    // A base_interval alone: max_interval 10 x base; a retry budget without its values: 20 %
    // and 3.
    let file = "retry_policy: { retry_on: reset, retry_back_off: { base_interval: 0.1s } }\n\
                circuit_breakers: { thresholds: [ { retry_budget: {} } ] }\n";
    let p = policy_of(file, &named(""));
    assert_eq!(p.retry.max_attempts, Some(2));
    match p.retry.backoff {
        Backoff::Envoy {
            base_interval,
            max_interval,
            ..
        } => {
            assert_eq!(base_interval, SimDuration::from_millis(100));
            assert_eq!(max_interval, SimDuration::from_secs(1));
        }
        ref other => panic!("{other:?}"),
    }
    let b = p.budget.unwrap();
    assert!(
        matches!(
            b.kind,
            BudgetKind::Envoy(EnvoyLimit::RetryBudget { budget_percent, min_retry_concurrency: 3 })
                if budget_percent == 20.0
        ),
        "{b:?}"
    );
    // retry_on that matches nothing retrystorm models: one attempt.
    let p = policy_of(
        "retry_policy: { retry_on: connect-failure, num_retries: 3 }\n",
        &named(""),
    );
    assert_eq!(p.retry.max_attempts, Some(1));
    assert!(
        p.read_from
            .unwrap()
            .contains("connect-failure matches nothing")
    );
    // A route without any retry policy makes one attempt.
    let rc = "virtual_hosts: [ { name: v, routes: [ { match: { prefix: / }, route: { cluster: c } } ] } ]\n";
    let p = policy_of(rc, &named(""));
    assert_eq!(p.retry.max_attempts, Some(1));
}

#[test]
fn the_route_and_cluster_are_looked_up_by_name() {
    // The cart route: its own retry_policy replaces the virtual host's; cluster cart's first
    // DEFAULT entry (the HIGH one and the second DEFAULT one named, not used).
    let p = policy_of(BOOTSTRAP, &named(r#", "route": "cart""#));
    assert_eq!(p.retry.max_attempts, Some(3));
    let words = p.read_from.unwrap();
    for needle in [
        "route \"cart\" of virtual host \"shop\"",
        "replaces its virtual host's",
        "thresholds[0] (HIGH priority) not used",
        "thresholds[2] ignored",
        "max_retries 7 ignored",
        "not modelled: max_connections 100",
        "status 404 matches nothing",
    ] {
        assert!(words.contains(needle), "{needle:?} not in {words}");
    }
    // `cluster` names another cluster than the route's: plain has no circuit breakers.
    let p = policy_of(
        BOOTSTRAP,
        &named(r#", "route": "cart", "cluster": "plain""#),
    );
    let b = p.budget.unwrap();
    assert!(
        matches!(b.kind, BudgetKind::Envoy(EnvoyLimit::MaxRetries(3))),
        "{b:?}"
    );
    // Settings written beside the config win over it, key by key.
    let policy = r#"{ "retry": { "max_attempts": 2 }, "envoy_config": { "file": "configs/envoy.yaml", "route": "cart" } }"#;
    let p = policy_of(BOOTSTRAP, policy);
    assert_eq!(p.retry.max_attempts, Some(2));
    assert!(p.retry.retry_on.contains(Outcome::Throttled), "the file's");
}

#[test]
fn the_resolved_scenario_reruns_without_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = load(
        dir.path(),
        BOOTSTRAP,
        &scenario(0.1, &named(r#", "route": "cart""#)),
    )
    .unwrap();
    let resolved = resolved_json(&e)["variants"][0]["scenario"].clone();
    std::fs::remove_file(dir.path().join("configs/envoy.yaml")).unwrap();
    let again = load_str(&resolved.to_string(), "resolved", &LoadOptions::default()).unwrap();
    same_run(&e, &again);
}

/// A scenario naming configs/envoy.yaml (text `config`, none if None) with `more` keys, run
/// by the binary: exit code 2, no output folder; returns stderr.
fn reject(config: Option<&str>, more: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("configs")).unwrap();
    if let Some(config) = config {
        std::fs::write(dir.path().join("configs/envoy.yaml"), config).unwrap();
    }
    std::fs::write(
        dir.path().join("scenario.json"),
        scenario(0.1, &named(more)),
    )
    .unwrap();
    let out = retrystorm(dir.path(), &["run", "scenario.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!dir.path().join("output").exists(), "nothing is written");
    stderr
}

/// A file of `retry_policy` alone.
fn rp(body: &str) -> String {
    format!("retry_policy: {{ {body} }}\n")
}

#[test]
fn a_wrong_file_names_the_scenario_path_the_file_the_path_inside_the_rule_and_the_fix() {
    let route = r#", "route": "cart""#;
    let cases: Vec<(Option<String>, &str, Vec<&str>)> = vec![
        (None, "", vec!["cannot read"]),
        (Some("retry_policy: { retry_on: [\n".into()), "", vec!["is not valid YAML", "line"]),
        (Some("retry_policy: {}\nretry_policy: {}\n".into()), "", vec!["is not valid YAML", "duplicate"]),
        (Some("listeners: []\n".into()), "", vec!["none of the Envoy files", "static bootstrap"]),
        (Some("retry_policy: {}\nroutes: []\n".into()), "", vec!["at routes", "neither retry_policy nor circuit_breakers"]),
        (Some(BOOTSTRAP.into()), "", vec!["has 2 routes", "\"cart\", \"plain\"", "envoy_config.route"]),
        (Some(BOOTSTRAP.into()), r#", "route": "carts""#, vec!["no route named \"carts\""]),
        (Some(BOOTSTRAP.replace("name: plain\n                match", "name: cart\n                match")), route, vec!["routes[1]", "second route named \"cart\""]),
        (Some(BOOTSTRAP.replace("cluster: cart\n", "cluster: carts\n")), route, vec!["static_resources.clusters", "no cluster named \"carts\"", "CDS"]),
        (Some(rp("retry_on: 5xx")), route, vec!["no route to look up", "leave envoy_config.route out"]),
        (Some("virtual_hosts: [ { routes: [ { route: { cluster: c } } ] } ]\n".into()), r#", "cluster": "c""#, vec!["RouteConfiguration, which has no clusters"]),
        (Some("virtual_hosts: [ { routes: [ { direct_response: { status: 200 } } ] } ]\n".into()), "", vec!["virtual_hosts[0].routes[0]", "no `route` action"]),
        (Some(BOOTSTRAP.replace("route: { cluster: plain }", "route: { weighted_clusters: {} }")), r#", "route": "plain""#, vec!["routes[1].route", "no single cluster", "envoy_config.cluster"]),
        (Some(BOOTSTRAP.replace("timeout: 2s", "timeout: 2s\n                  hedge_policy: { hedge_on_per_try_timeout: true }")), route, vec!["routes[0].route.hedge_policy", "hedging on per-try timeout", "policy.hedge"]),
        (Some(BOOTSTRAP.replace("retry_policy: { retry_on: gateway-error, num_retries: 4 }", "retry_policy_typed_config: {}")), r#", "route": "plain""#, vec!["virtual_hosts[0].retry_policy_typed_config", "retry policy extension"]),
        (Some(rp("retry_on: \"5xx,teapot\"")), "", vec!["retry_policy.retry_on", "\"teapot\" is not one of Envoy's retry conditions"]),
        (Some(rp("retry_on: 5xx, jitter: 1")), "", vec!["retry_policy.jitter", "unknown field `jitter`"]),
        (Some(rp("retry_on: 5xx, rate_limited_retry_back_off: {}")), "", vec!["retry_policy.rate_limited_retry_back_off", "retry.retry_after"]),
        (Some(rp("retry_on: 5xx, per_try_idle_timeout: 1s")), "", vec!["retry_policy.per_try_idle_timeout", "idle"]),
        (Some(rp("retry_on: 5xx, retriable_headers: []")), "", vec!["retry_policy.retriable_headers", "retriable_status_codes"]),
        (Some(rp("retry_on: 5xx, retry_back_off: { max_interval: 1s }")), "", vec!["retry_policy.retry_back_off", "no base_interval"]),
        (Some(rp("retry_on: 5xx, retry_back_off: { base_interval: 0.1s, max_interval: 0.05s }")), "", vec!["retry_back_off.max_interval", "shorter than base_interval"]),
        (Some(rp("retry_on: 5xx, retry_back_off: { base_interval: 0.0005s }")), "", vec!["retry_back_off.base_interval", "below the 1 ms"]),
        (Some(rp("retry_on: 5xx, per_try_timeout: 100ms")), "", vec!["retry_policy.per_try_timeout", "\"100ms\"", "protobuf JSON duration"]),
        (Some(rp("retry_on: 5xx, num_retries: 1000")), "", vec!["retry_policy.num_retries", "is 1000", "at most 999"]),
        (Some(rp("retry_on: 5xx, retry_host_predicate: [ { name: envoy.retry_host_predicates.omit_canary_hosts } ]")), "", vec!["retry_host_predicate[0].name", "previous_hosts"]),
        (Some("circuit_breakers: { thresholds: [ { retry_budget: { budget_percent: { value: 150 } } } ] }\nretry_policy: { retry_on: 5xx }\n".into()), "", vec!["circuit_breakers.thresholds[0].retry_budget.budget_percent.value", "is 150", "between 0 and 100"]),
        (Some("circuit_breakers: { thresholds: [ { priority: LOW } ] }\nretry_policy: { retry_on: 5xx }\n".into()), "", vec!["thresholds[0].priority", "\"LOW\"", "DEFAULT or HIGH"]),
        (Some("circuit_breakers: { thresholds: [ { max_retries: -1 } ] }\nretry_policy: { retry_on: 5xx }\n".into()), "", vec!["thresholds[0].max_retries"]),
    ];
    for (config, more, needles) in cases {
        let stderr = reject(config.as_deref(), more);
        for needle in ["policy.envoy_config.file", "\"configs/envoy.yaml\""]
            .iter()
            .chain(&needles)
        {
            assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
        }
    }
}

#[test]
fn a_policy_reads_one_config_and_never_from_a_sweep_or_set() {
    let both = r#"{ "envoy_config": { "file": "e.yaml" }, "grpc_service_config": { "file": "g.json", "service": "s" } }"#;
    let err = load_str(&scenario(0.1, both), "t", &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("policy.envoy_config"), "{err}");
    assert!(err.contains("a policy reads one config file"), "{err}");
    let options = LoadOptions {
        set: vec![(
            "policy.envoy_config".into(),
            serde_json::json!({ "file": "configs/envoy.yaml" }),
        )],
        ..LoadOptions::default()
    };
    let err = load_str(&scenario(0.1, "{}"), "t", &options)
        .unwrap_err()
        .to_string();
    assert!(err.contains("a sweep or --set may not bring one"), "{err}");
}

#[test]
fn the_bundled_scenario_reads_its_envoy_bootstrap_and_runs_as_written_by_hand() {
    let e = load_file(
        &crate::scenario_path("envoy-budget-storm"),
        &LoadOptions::default(),
    )
    .unwrap();
    let variants = &e.points[0].variants;
    let read = variants
        .iter()
        .find(|v| v.name == "read from configs/envoy.yaml")
        .unwrap();
    let by_hand = variants
        .iter()
        .find(|v| v.name == "retry budget 20 %, 3")
        .unwrap();
    let words = read.scenario.policy.read_from.clone().unwrap();
    assert!(
        words.contains("configs/envoy.yaml, a static bootstrap"),
        "{words}"
    );
    let (a, b) = (&read.scenario.policy, &by_hand.scenario.policy);
    assert_eq!(format!("{:?}", a.budget), format!("{:?}", b.budget));
    assert_eq!(a.timeout, b.timeout);
    assert_eq!(a.retry.max_attempts, b.retry.max_attempts);
}
