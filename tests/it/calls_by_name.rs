//! A service's calls written as an object of calls by name: a variant's merge patch reaches
//! one call by its name, removes one with `null` and adds one at the end; the list form still
//! loads, two calls to one service take two names, and a patch that cannot merge into the
//! base's form is an error that says why and what to write instead.

use serde_json::{Value, json};

use retrystorm::scenario::{LoadOptions, Problem, ScenarioError, load_str, resolved_json};

use crate::cli::{assert_report_re_renders, retrystorm};
use crate::scenario_path;

/// A two-service graph whose entry `a` calls `b` and `c`, written as `calls`.
fn graph(calls: Value, variants: Value) -> Value {
    json!({
        "name": "by-name", "duration": "2s", "replications": 2,
        "clients": {"count": 10, "workload": {"open": {"rate_per_s": 50}}, "entry": "a"},
        "policy": {"timeout": "1s"},
        "services": {
            "a": {"concurrency": 8, "service_time": {"constant": "1ms"}, "calls": calls},
            "b": {"service_time": {"constant": "2ms"}},
            "c": {"service_time": {"constant": "3ms"}}
        },
        "variants": variants
    })
}

fn load(doc: &Value) -> retrystorm::scenario::Experiment {
    load_str(&doc.to_string(), "test", &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn problems(doc: &Value) -> Vec<String> {
    match load_str(&doc.to_string(), "test", &LoadOptions::default()) {
        Err(ScenarioError::Invalid { problems, .. }) => {
            problems.iter().map(Problem::to_string).collect()
        }
        other => panic!("expected problems, got {other:?}"),
    }
}

/// Each variant's calls as resolved: (name, to, timeout) per call.
fn calls_of(doc: &Value) -> Vec<Vec<(String, String, String)>> {
    let resolved = resolved_json(&load(doc));
    resolved["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let calls = &v["scenario"]["services"]["a"]["calls"];
            let entries: Vec<(String, &Value)> = match calls {
                Value::Object(map) => map.iter().map(|(k, c)| (k.clone(), c)).collect(),
                Value::Array(list) => list.iter().map(|c| (String::new(), c)).collect(),
                other => panic!("calls {other}"),
            };
            entries
                .into_iter()
                .map(|(name, c)| {
                    let timeout = c["policy"]["timeout"].as_str().unwrap_or("-").to_string();
                    (name, c["to"].as_str().unwrap().to_string(), timeout)
                })
                .collect()
        })
        .collect()
}

fn triple(name: &str, to: &str, timeout: &str) -> (String, String, String) {
    (name.into(), to.into(), timeout.into())
}

#[test]
fn a_patch_reaches_one_call_by_name_removes_one_with_null_and_adds_one_at_the_end() {
    let calls =
        json!({"b": {"policy": {"timeout": "100ms"}}, "c": {"policy": {"timeout": "200ms"}}});
    let variants = json!([
        {"name": "base", "patch": {}},
        {"name": "slower c", "patch": {"services": {"a": {"calls": {"c": {"policy": {"timeout": "2s"}}}}}}},
        {"name": "no b", "patch": {"services": {"a": {"calls": {"b": null}}, "b": null}}},
        {"name": "b twice", "patch": {"services": {"a": {"calls": {"b-again": {"to": "b", "policy": {"timeout": "5ms"}}}}}}}
    ]);
    assert_eq!(
        calls_of(&graph(calls, variants)),
        vec![
            vec![triple("b", "b", "100ms"), triple("c", "c", "200ms")],
            vec![triple("b", "b", "100ms"), triple("c", "c", "2s")],
            vec![triple("c", "c", "200ms")],
            vec![
                triple("b", "b", "100ms"),
                triple("c", "c", "200ms"),
                triple("b-again", "b", "5ms")
            ],
        ]
    );
}

#[test]
fn calls_by_name_simulate_as_the_same_calls_in_a_list() {
    let listed = graph(
        json!([{"to": "b", "fraction": 0.5, "policy": {"timeout": "100ms"}},
               {"to": "c", "fraction": 0.5, "policy": {"timeout": "200ms"}}]),
        Value::Null,
    );
    let named = graph(
        json!({"b": {"fraction": 0.5, "policy": {"timeout": "100ms"}},
               "c": {"fraction": 0.5, "policy": {"timeout": "200ms"}}}),
        Value::Null,
    );
    let scenario = |doc: &Value| format!("{:?}", load(doc).points[0].variants[0].scenario);
    assert_eq!(scenario(&listed), scenario(&named));
}

#[test]
fn a_patch_of_calls_by_name_onto_a_list_is_an_error_that_says_what_to_write() {
    let listed = json!([{"to": "b", "policy": {"timeout": "100ms"}}, {"to": "c"}]);
    let variants = json!([{"name": "slower c",
        "patch": {"services": {"a": {"calls": {"c": {"policy": {"timeout": "2s"}}}}}}}]);
    let found = problems(&graph(listed, variants));
    assert_eq!(found.len(), 1, "{found:?}");
    for text in [
        "variants[0].patch.services.a.calls: names calls by key (got {\"c\":",
        "the base scenario writes services.a.calls as a list of 2",
        "it would replace the list whole with only the calls it names",
        "write the base's calls as an object of calls by name ({\"b\": {...}, \"c\": {...}}",
        "or give the whole list in the patch (line 1, column",
    ] {
        assert!(found[0].contains(text), "{text:?} not in {}", found[0]);
    }
}

#[test]
fn a_list_in_a_patch_replaces_calls_written_by_name() {
    let named = json!({"b": {"policy": {"timeout": "100ms"}}, "c": {}});
    let variants = json!([{"name": "base", "patch": {}},
        {"name": "only c", "patch": {"services": {"a": {"calls": [{"to": "c", "policy": {"timeout": "9ms"}}]}, "b": null}}}]);
    let calls = calls_of(&graph(named, variants));
    assert_eq!(calls[1], vec![triple("", "c", "9ms")]);
}

#[test]
fn a_call_by_name_that_names_no_service_or_breaks_the_name_rules_is_an_error() {
    let found = problems(&graph(
        json!({"bb": {"policy": {"timeout": "1s"}}}),
        Value::Null,
    ));
    assert!(
        found.iter().any(|p| p.starts_with(
            "services.a.calls.bb: names no service: a call without \"to\" calls the service it is named after (got \"bb\"); did you mean \"b\"?"
        )),
        "{found:?}"
    );
    let found = problems(&graph(
        json!({"b.v2": {"to": "b", "policy": {"timeout": "1s"}}}),
        Value::Null,
    ));
    assert!(
        found.iter().any(|p| p.starts_with(
            "services.a.calls: the call name \"b.v2\" must not contain '.', '[' or ']': a path such as services.a.calls.<name>.policy"
        )),
        "{found:?}"
    );
    let found = problems(&graph(json!([{"policy": {"timeout": "1s"}}]), Value::Null));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("services.a.calls[0].to: is required: a string")),
        "{found:?}"
    );
}

#[test]
fn a_sweep_reaches_a_call_by_name() {
    let calls = json!({"b": {"policy": {"timeout": "100ms"}}, "c": {"policy": {"timeout": "1s"}}});
    let mut doc = graph(calls, Value::Null);
    doc["sweep"] = json!({"path": "services.a.calls.b.policy.timeout", "values": ["10ms", "20ms"]});
    let e = load(&doc);
    let timeouts: Vec<u64> = e
        .points
        .iter()
        .map(|p| {
            p.variants[0].scenario.services[0].calls[0]
                .policy
                .timeout
                .unwrap()
                .as_nanos()
        })
        .collect();
    assert_eq!(timeouts, vec![10_000_000, 20_000_000]);
}

/// tiers-bulkhead writes its calls by name and patches one call per variant: its results are
/// those of the same scenario written as lists, each variant's patch rewriting every call, and
/// `report DIR` re-renders its run byte for byte.
#[test]
fn tiers_bulkhead_by_name_gives_the_results_of_its_lists_and_re_renders() {
    let dir = tempfile::tempdir().unwrap();
    let named: Value =
        serde_json::from_slice(&std::fs::read(scenario_path("tiers-bulkhead")).unwrap()).unwrap();
    assert!(named["services"]["a"]["calls"].is_object());
    // The same scenario with lists: each call names its service, each patch lists every call.
    let to_list = |calls: &Value| -> Value {
        let map = calls.as_object().unwrap();
        let list = map.iter().map(|(name, call)| {
            let mut call = call.clone();
            call.as_object_mut()
                .unwrap()
                .insert("to".into(), name.clone().into());
            call
        });
        Value::Array(list.collect())
    };
    let mut listed = named.clone();
    let base_calls = named["services"]["a"]["calls"].clone();
    listed["services"]["a"]["calls"] = to_list(&base_calls);
    for v in listed["variants"].as_array_mut().unwrap() {
        if let Some(patch) = v["patch"]["services"]["a"]["calls"].as_object() {
            let mut calls = base_calls.clone();
            for (name, call) in patch {
                merge(&mut calls[name], call);
            }
            v["patch"]["services"]["a"]["calls"] = to_list(&calls);
        }
    }
    let listed_file = dir.path().join("listed.json");
    std::fs::write(&listed_file, listed.to_string()).unwrap();
    let summary = |file: &std::path::Path, out: &str| {
        let out = dir.path().join(out);
        let args = [
            "run",
            file.to_str().unwrap(),
            "--replications",
            "2",
            "--quiet",
            "--out",
        ];
        let mut args = args.to_vec();
        args.push(out.to_str().unwrap());
        let status = retrystorm(dir.path(), &args);
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        (std::fs::read(out.join("summary.json")).unwrap(), out)
    };
    let (by_name, out) = summary(&scenario_path("tiers-bulkhead"), "named");
    let (by_list, _) = summary(&listed_file, "listed");
    assert!(
        by_name == by_list,
        "summary.json differs between the two forms"
    );
    assert!(assert_report_re_renders(dir.path(), &out) >= 10);
}

/// JSON merge patch (RFC 7396), for the test's own rewriting.
fn merge(doc: &mut Value, patch: &Value) {
    match (doc.as_object_mut(), patch.as_object()) {
        (Some(map), Some(patch)) => {
            for (k, v) in patch {
                merge(map.entry(k.as_str()).or_insert(Value::Null), v);
            }
        }
        _ => *doc = patch.clone(),
    }
}

#[test]
fn a_call_name_written_twice_is_an_error_not_a_lost_call() {
    let text = graph(json!({}), Value::Null).to_string().replace(
        r#""calls":{}"#,
        r#""calls":{"b":{"to":"b"},"b":{"to":"c"}}"#,
    );
    assert!(text.contains(r#""b":{"to":"c"}"#), "{text}");
    let found = match load_str(&text, "test", &LoadOptions::default()) {
        Err(ScenarioError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    };
    assert!(
        found[0].to_string().starts_with(
            "services.a.calls.b: is written twice in one object: JSON keeps the last and drops the first, so a call would be lost; give each call its own name, and name the service it calls in \"to\""
        ),
        "{found:?}"
    );
}
