//! `retrystorm schema` as strict as `check` wherever a JSON Schema can say the rule: every
//! bundled scenario (and every variant of it as resolved) passes the schema, and for a set of
//! values on either side of each bound, pattern and count the schema accepts exactly what
//! `check` accepts. The schema is read by an independent validator, as an editor would.

use serde_json::{Value, json};

use retrystorm::scenario::{LoadOptions, load_str, resolved_json};

use crate::cli::retrystorm;
use crate::scenario_path;

/// The schema as `retrystorm schema` prints it, compiled.
fn validator() -> jsonschema::Validator {
    let dir = tempfile::tempdir().unwrap();
    let out = retrystorm(dir.path(), &["schema"]);
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// A scenario with one server and a policy that has every setting with a bound.
fn server() -> Value {
    json!({
        "name": "bounds", "duration": "1s", "replications": 1,
        "clients": {"count": 2, "workload": {"open": {"rate_per_s": 10}}},
        "server": {
            "concurrency": 2, "queue_limit": 5, "service_time": {"constant": "1ms"},
            "error_rate": 0.1, "rate_limit": {"rate_per_s": 100, "burst": 10},
            "faults": [{"from": "0.2s", "to": "0.4s", "service_time_factor": 2}]
        },
        "policy": {
            "timeout": "100ms",
            "retry": {"max_attempts": 3, "backoff": {"base": "1ms", "multiplier": 2, "cap": "10ms", "jitter": "full"}},
            "breaker": {"failure_rate_threshold": 0.5, "window": {"count": 20}},
            "budget": {"ratio": {"percent": 0.1}},
            "hedge": {"delay": "p95", "max_hedges": 1},
            "adaptive_throttle": {"k": 2}
        },
        "variants": [{"name": "base", "patch": {}}]
    })
}

/// The server of [`server`] run as two replicas whose callers detect outliers.
fn pool() -> Value {
    let doc = with(server(), "/server/replicas", json!(2));
    with(doc, "/server/outlier_detection", json!({}))
}

/// A call graph: `a` calls `b`.
fn graph() -> Value {
    json!({
        "name": "bounds", "duration": "1s",
        "clients": {"count": 2, "workload": {"open": {"rate_per_s": 10}}, "entry": "a"},
        "policy": {"timeout": "1s"},
        "services": {
            "a": {"service_time": {"constant": "1ms"}, "calls": [{"to": "b", "fraction": 1, "policy": {"timeout": "1s"}}]},
            "b": {"service_time": {"lognormal": {"median": "1ms", "sigma": 0.5}}}
        }
    })
}

/// `doc` with `value` at JSON pointer `at` (objects made on the way).
fn with(mut doc: Value, at: &str, value: Value) -> Value {
    let mut here = &mut doc;
    for key in at.split('/').skip(1) {
        here = match here {
            Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
            _ => here
                .as_object_mut()
                .unwrap()
                .entry(key)
                .or_insert(json!({})),
        };
    }
    *here = value;
    doc
}

#[test]
fn every_bundled_scenario_and_every_resolved_variant_passes_the_schema() {
    let validator = validator();
    let folder = scenario_path("x").parent().unwrap().to_path_buf();
    let mut checked = 0;
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        // The scenario files; `configs/` holds the service configs they read.
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        // Named by its path: a service config it names is read from beside it.
        let experiment =
            load_str(&text, &path.display().to_string(), &LoadOptions::default()).unwrap();
        let resolved = resolved_json(&experiment);
        for v in resolved["variants"].as_array().unwrap() {
            let scenario = &v["scenario"];
            let errors: Vec<String> = validator
                .iter_errors(scenario)
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{} {}: {errors:?}",
                path.display(),
                v["name"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 50, "{checked}");
}

/// A base scenario, a JSON pointer into it, the value put there, and whether both the schema
/// and `check` accept the result.
type Case = (fn() -> Value, &'static str, Value, bool);

#[test]
fn the_schema_accepts_what_check_accepts_on_either_side_of_every_rule_it_can_say() {
    let validator = validator();
    let cases: Vec<Case> = vec![
        (server, "/name", json!("has space"), false),
        (server, "/name", json!(".hidden"), false),
        (server, "/name", json!("ok.name_1-2"), true),
        (server, "/replications", json!(0), false),
        (server, "/replications", json!(1_000_000), true),
        (server, "/replications", json!(1_000_001), false),
        (server, "/clients/count", json!(0), false),
        (server, "/clients/count", json!(1), true),
        (
            server,
            "/clients/workload/open/rate_per_s",
            json!(-1),
            false,
        ),
        (
            server,
            "/clients/workload/open/rate_per_s",
            json!(2e9),
            false,
        ),
        (server, "/server/error_rate", json!(1.5), false),
        (server, "/server/error_rate", json!(-0.1), false),
        (server, "/server/error_rate", json!(1), true),
        (server, "/server/permanent_error_rate", json!(2), false),
        (server, "/server/concurrency", json!(0), false),
        (server, "/server/concurrency", json!("unlimited"), true),
        (server, "/server/queue_limit", json!(0), true),
        (
            server,
            "/server/queue_limit",
            json!(4_294_967_296u64),
            false,
        ),
        (server, "/server/rate_limit/burst", json!(0.5), false),
        (
            server,
            "/server/faults/0/service_time_factor",
            json!(0),
            false,
        ),
        (
            server,
            "/server/faults/0/service_time_factor",
            json!(1000),
            true,
        ),
        (
            server,
            "/server/faults/0/service_time_factor",
            json!(1001),
            false,
        ),
        (server, "/server/faults/0/error_rate", json!(1.01), false),
        (
            server,
            "/server/service_time",
            json!({"lognormal": {"median": "1ms", "sigma": -1}}),
            false,
        ),
        (
            server,
            "/server/service_time",
            json!({"mixture": [{"weight": 0, "dist": {"constant": "1ms"}}]}),
            false,
        ),
        (server, "/duration", json!("500 ms"), true),
        (server, "/duration", json!(" 1s "), true),
        (server, "/duration", json!(".5s"), true),
        (server, "/duration", json!("1.s"), true),
        (server, "/duration", json!("+1s"), true),
        (server, "/duration", json!("1.5e3ms"), false),
        (server, "/duration", json!("1"), false),
        (server, "/duration", json!("5 m s"), false),
        (server, "/duration", json!("1sec"), false),
        (server, "/policy/timeout", json!("-0s"), false),
        (server, "/policy/timeout", json!("-5ms"), false),
        (server, "/policy/retry/max_attempts", json!(0), false),
        (server, "/policy/retry/max_attempts", json!(1000), true),
        (server, "/policy/retry/max_attempts", json!(1001), false),
        (
            server,
            "/policy/retry/max_attempts",
            json!("unlimited"),
            true,
        ),
        (
            server,
            "/policy/retry/backoff/multiplier",
            json!(0.5),
            false,
        ),
        (
            server,
            "/policy/breaker/failure_rate_threshold",
            json!(0),
            false,
        ),
        (
            server,
            "/policy/breaker/failure_rate_threshold",
            json!(1),
            true,
        ),
        (server, "/policy/breaker/window/count", json!(0), false),
        (
            server,
            "/policy/budget",
            json!({"ratio": {"percent": 1.5}}),
            false,
        ),
        (
            server,
            "/policy/budget",
            json!({"token_bucket": {"max_tokens": 0, "token_ratio": 0.1}}),
            false,
        ),
        (server, "/policy/hedge/delay", json!("10ms"), true),
        (server, "/policy/hedge/delay", json!("p0.0001"), true),
        (server, "/policy/hedge/delay", json!("p99.9999"), true),
        (server, "/policy/hedge/delay", json!("p99.99999"), false),
        (server, "/policy/hedge/delay", json!("p0"), false),
        (server, "/policy/hedge/delay", json!("p100"), false),
        (server, "/policy/hedge/delay", json!("p0.0000"), false),
        (server, "/policy/hedge/delay", json!("soon"), false),
        (server, "/policy/hedge/max_hedges", json!(11), false),
        (server, "/policy/hedge/window", json!(19), false),
        (server, "/policy/hedge/window", json!(20), true),
        (server, "/policy/adaptive_throttle/k", json!(0.5), false),
        (server, "/policy/adaptive_throttle/k", json!(100), true),
        (server, "/limits/max_events", json!(0), false),
        (server, "/variants", json!([]), false),
        (server, "/variants/0/name", json!(" "), false),
        (server, "/variants/0/name", json!("a\tb"), false),
        (server, "/variants/0/patch", json!(5), false),
        (server, "/variants/0/patch", json!({"seed": 2}), false),
        (server, "/variants/0/patch", json!(null), true),
        (
            server,
            "/sweep",
            json!({"path": "clients.count", "values": []}),
            false,
        ),
        (
            server,
            "/sweep",
            json!({"path": "clients.count", "label": "", "values": [1]}),
            false,
        ),
        (
            server,
            "/sweep",
            json!({"path": "clients.count", "label": "clients", "values": [1]}),
            true,
        ),
        (graph, "/services/a/calls/0/fraction", json!(0), false),
        (graph, "/services/a/calls/0/fraction", json!(0.5), true),
        (
            graph,
            "/services/a/calls/0/policy/bulkhead",
            json!({"max_concurrent": 0}),
            false,
        ),
        (
            graph,
            "/services/a/calls",
            json!({"b": {"policy": {"timeout": "1s"}}}),
            true,
        ),
        (
            graph,
            "/services/a/calls",
            json!({"b.x": {"to": "b", "policy": {"timeout": "1s"}}}),
            false,
        ),
        (
            graph,
            "/services/a/calls",
            json!([{"policy": {"timeout": "1s"}}]),
            false,
        ),
        (
            pool,
            "/server/outlier_detection/consecutive_5xx",
            json!(0),
            false,
        ),
        (
            pool,
            "/server/outlier_detection/consecutive_5xx",
            json!(1),
            true,
        ),
        (
            pool,
            "/server/outlier_detection/consecutive_gateway_failure",
            json!(0),
            false,
        ),
        (
            pool,
            "/server/outlier_detection/max_ejection_percent",
            json!(100),
            true,
        ),
        (
            pool,
            "/server/outlier_detection/max_ejection_percent",
            json!(101),
            false,
        ),
        (
            pool,
            "/server/outlier_detection/always_eject_one_host",
            json!(true),
            true,
        ),
        (
            pool,
            "/server/outlier_detection/interval",
            json!("1s"),
            true,
        ),
    ];
    let mut wrong = Vec::new();
    for (base, at, value, ok) in &cases {
        let doc = with(base(), at, value.clone());
        let check = load_str(&doc.to_string(), "x", &LoadOptions::default()).is_ok();
        let schema = validator.is_valid(&doc);
        if check != *ok || schema != *ok {
            wrong.push(format!(
                "{at} = {value}: check {check}, schema {schema}, want {ok}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Rules a JSON Schema cannot say (or not without repeating the format's arithmetic), where
/// `check` stays the stricter: the schema lets these pass. A change that makes the schema say
/// one of them moves it to the test above.
#[test]
fn the_rules_only_check_says_are_the_known_ones() {
    let validator = validator();
    let cases: Vec<(&str, Value)> = vec![
        // A duration's upper bound and "longer than zero".
        ("/duration", json!("2000000s")),
        ("/duration", json!("0s")),
        // One setting against another.
        ("/max_time", json!("0.5s")),
        ("/server/faults/0/to", json!("0.1s")),
        // Outlier detection needs a pool to eject from.
        ("/server/outlier_detection", json!({})),
    ];
    for (at, value) in cases {
        let doc = with(server(), at, value.clone());
        assert!(validator.is_valid(&doc), "{at} = {value}");
        let check = load_str(&doc.to_string(), "x", &LoadOptions::default());
        assert!(check.is_err(), "{at} = {value}");
    }
}
