//! `policy.envoy_config`: an Envoy route's `retry_policy` and its cluster's
//! `circuit_breakers`, read from an Envoy YAML (or JSON) file into retrystorm's own policy
//! settings, in one place: the raw setting a scenario writes, the kinds of file (a static
//! bootstrap, a RouteConfiguration, or a bare `retry_policy` with `circuit_breakers`), the
//! route and cluster lookup, the mapping onto `retry`, `timeout`, `deadline` and `budget`, and
//! the words report.md says of it.
//!
//! `config_file.rs` reads the file and expands the policy that names it (the file's settings
//! under the ones written beside it, what was understood in `read_as`). Whatever the file says
//! about retries that retrystorm cannot model is refused with its path inside the file, or,
//! where it cannot change a run of retrystorm's, named in `read_as`: nothing is dropped
//! without a word. Routing, listeners and the rest of Envoy's configuration play no part.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::config_file::{ConfigKind, Inner};
use super::error::{num, quote};
use super::grpc_config::{STATUS_CODES, duration};
use super::policy::retry::MAX_ATTEMPTS;

/// Envoy's default `num_retries`.
pub const DEFAULT_NUM_RETRIES: u64 = 1;
/// Envoy's default route `timeout`, the whole request's, retries included.
pub const DEFAULT_ROUTE_TIMEOUT: &str = "15s";
/// Envoy's default `retry_back_off.base_interval`, ms (`upstream.base_retry_backoff_ms`).
pub const DEFAULT_BASE_INTERVAL_MS: u64 = 25;
/// Envoy's default circuit breaker `max_retries`.
pub const DEFAULT_MAX_RETRIES: u64 = 3;
/// The HTTP connection manager, whose `route_config` holds a listener's routes.
const HCM: &str = "envoy.filters.network.http_connection_manager";

/// `policy.envoy_config`: which Envoy file, and which route and cluster in it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEnvoyConfig {
    /// The Envoy YAML (or JSON) file, relative to the scenario file's folder: a static
    /// bootstrap, a RouteConfiguration, or `retry_policy` and `circuit_breakers` alone.
    #[schemars(length(min = 1))]
    pub file: String,
    /// The route's `name`; needed when the file has more than one route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// The cluster's `name` in `static_resources.clusters` (default: the route's `cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Written by retrystorm: what it understood of the file (scenario.resolved.json). A
    /// config that has it is not read again: the settings beside it are the file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_as: Option<String>,
}

impl ConfigKind for RawEnvoyConfig {
    const KEY: &'static str = "envoy_config";

    fn file(&self) -> &str {
        &self.file
    }

    fn read_as(&mut self) -> &mut Option<String> {
        &mut self.read_as
    }

    fn parse(bytes: &[u8], shown: &str) -> Result<Value, String> {
        // Through the YAML crate's own value, which refuses a key written twice.
        let yaml: serde_norway::Value = serde_norway::from_slice(bytes)
            .map_err(|e| format!("{shown} is not valid YAML: {e}"))?;
        serde_json::to_value(yaml)
            .map_err(|e| format!("{shown} is not what an Envoy config can be: {e}"))
    }

    fn import(&self, config: &Value) -> Result<(Value, String), Inner> {
        import(config, self)
    }
}

/// A route found in the file, with what it inherits from its virtual host.
struct Route<'a> {
    /// Its path in the file.
    at: String,
    name: Option<&'a str>,
    host: &'a str,
    value: &'a Value,
    /// The virtual host's `retry_policy` and `hedge_policy`, with their paths.
    host_retry: Option<(String, &'a Value)>,
    host_hedge: Option<(String, &'a Value)>,
    /// The virtual host's `retry_policy_typed_config`, refused when written.
    host_typed: Option<(String, &'a Value)>,
}

/// What a file holds: its kind in words, its routes and its clusters (each with its path).
struct Source<'a> {
    kind: &'static str,
    routes: Vec<Route<'a>>,
    clusters: Vec<(String, &'a Value)>,
}

/// The file's routes and clusters, by the kind of file its top-level keys say it is.
fn source<'a>(config: &'a Value, raw: &RawEnvoyConfig) -> Result<Source<'a>, Inner> {
    let mut routes = Vec::new();
    if let Some(resources) = config.get("static_resources") {
        let listeners = list(resources, "listeners", "static_resources")?;
        for (at, listener) in listeners {
            for (at, chain) in list(listener, "filter_chains", &at)? {
                for (at, filter) in list(chain, "filters", &at)? {
                    let typed = filter.get("typed_config");
                    let hcm = filter.get("name").and_then(Value::as_str) == Some(HCM)
                        || typed
                            .and_then(|t| t.get("@type"))
                            .and_then(Value::as_str)
                            .is_some_and(|t| t.ends_with(".HttpConnectionManager"));
                    if let (true, Some(rc)) = (hcm, typed.and_then(|t| t.get("route_config"))) {
                        virtual_hosts(rc, &format!("{at}.typed_config.route_config"), &mut routes)?;
                    }
                }
            }
        }
        let clusters = list(resources, "clusters", "static_resources")?;
        return Ok(Source {
            kind: "a static bootstrap",
            routes,
            clusters,
        });
    }
    if config.get("virtual_hosts").is_some() {
        virtual_hosts(config, "", &mut routes)?;
        return Ok(Source {
            kind: "a RouteConfiguration",
            routes,
            clusters: Vec::new(),
        });
    }
    if config.get("retry_policy").is_some() || config.get("circuit_breakers").is_some() {
        if let Some(k) = config.as_object().and_then(|keys| {
            keys.keys()
                .find(|k| *k != "retry_policy" && *k != "circuit_breakers")
        }) {
            return Err((
                k.clone(),
                "is neither retry_policy nor circuit_breakers, the two keys a file of them alone may have; remove it, or give a whole bootstrap".into(),
            ));
        }
        for (key, given) in [("route", &raw.route), ("cluster", &raw.cluster)] {
            if given.is_some() {
                return Err((
                    String::new(),
                    format!(
                        "holds retry_policy and circuit_breakers alone, with no {key} to look up; leave envoy_config.{key} out"
                    ),
                ));
            }
        }
        return Ok(Source {
            kind: "retry_policy and circuit_breakers alone",
            routes: Vec::new(),
            clusters: Vec::new(),
        });
    }
    Err((
        String::new(),
        "is none of the Envoy files retrystorm reads: a static bootstrap (static_resources), a RouteConfiguration (virtual_hosts), or retry_policy and circuit_breakers alone; give one of them".into(),
    ))
}

/// The list at `parent.key` (absent is empty), each entry with its path.
fn list<'a>(parent: &'a Value, key: &str, at: &str) -> Result<Vec<(String, &'a Value)>, Inner> {
    let at = if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    };
    match parent.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{at}[{i}]"), v))
            .collect()),
        Some(_) => Err((
            at,
            "is not a list, as Envoy's config has it; write one".into(),
        )),
    }
}

/// The routes of a RouteConfiguration at `at`.
fn virtual_hosts<'a>(rc: &'a Value, at: &str, routes: &mut Vec<Route<'a>>) -> Result<(), Inner> {
    for (vh_at, vh) in list(rc, "virtual_hosts", at)? {
        let with = |key: &str| vh.get(key).map(|v| (format!("{vh_at}.{key}"), v));
        for (at, value) in list(vh, "routes", &vh_at)? {
            routes.push(Route {
                at,
                name: value.get("name").and_then(Value::as_str),
                host: vh.get("name").and_then(Value::as_str).unwrap_or(""),
                value,
                host_retry: with("retry_policy"),
                host_hedge: with("hedge_policy"),
                host_typed: with("retry_policy_typed_config"),
            });
        }
    }
    Ok(())
}

/// The route `name` names, or the file's one route.
fn pick_route<'a, 'b>(routes: &'b [Route<'a>], name: Option<&str>) -> Result<&'b Route<'a>, Inner> {
    let names = || {
        let named: Vec<String> = routes.iter().filter_map(|r| r.name.map(quote)).collect();
        if named.is_empty() {
            "none has a name".to_string()
        } else {
            format!("named: {}", named.join(", "))
        }
    };
    let found: Vec<&Route> = match name {
        Some(n) => routes.iter().filter(|r| r.name == Some(n)).collect(),
        None => routes.iter().collect(),
    };
    match (found.as_slice(), name) {
        ([one], _) => Ok(one),
        ([], None) => Err((
            String::new(),
            "has no route (is its route_config from RDS?); give a file whose routes are written in it".into(),
        )),
        ([], Some(n)) => Err((
            String::new(),
            format!("has no route named {} ({}); write one of them in envoy_config.route", quote(n), names()),
        )),
        (many, None) => Err((
            String::new(),
            format!(
                "has {} routes ({}); name the one to read in envoy_config.route (give it a name in the file if it has none)",
                many.len(),
                names()
            ),
        )),
        (many, Some(n)) => Err((
            many[1].at.clone(),
            format!("is a second route named {} (the first is {}); rename one", quote(n), many[0].at),
        )),
    }
}

/// The config's retry settings for the route and cluster `raw` names, as a retrystorm
/// policy object, and the words of what was understood.
fn import(config: &Value, raw: &RawEnvoyConfig) -> Result<(Value, String), Inner> {
    let src = source(config, raw)?;
    let mut policy = Map::new();
    let mut words = vec![format!("from {}, {}", raw.file, src.kind)];
    let (retry_at, breakers_at) = if src.kind.starts_with("retry_policy") {
        let at = |k: &str| config.get(k).map(|v| (k.to_string(), v));
        (at("retry_policy"), at("circuit_breakers"))
    } else {
        let route = pick_route(&src.routes, raw.route.as_deref())?;
        route_settings(route, &mut policy, &mut words)?;
        let action = &route.value["route"];
        let cluster = cluster(&src, raw, action, &route.at)?;
        let retry_at = action
            .get("retry_policy")
            .map(|v| (format!("{}.route.retry_policy", route.at), v))
            .or_else(|| route.host_retry.clone());
        match &route.host_retry {
            Some(_) if action.get("retry_policy").is_some() => words.push(
                "the route's retry_policy (it replaces its virtual host's, as in Envoy)".into(),
            ),
            Some(_) => words.push("the virtual host's retry_policy".into()),
            None => {}
        }
        (retry_at, cluster)
    };
    let Some((at, value)) = retry_at else {
        words.push(
            "no retry_policy: 1 attempt, as Envoy makes (the circuit breaker's retry limits play no part)".into(),
        );
        policy.insert("retry".into(), json!({"max_attempts": 1}));
        return Ok((Value::Object(policy), words.join("; ")));
    };
    let p: RetryPolicy = typed(value, &at)?;
    if retry(&p, &at, &mut policy, &mut words)? {
        breakers(breakers_at, &mut policy, &mut words)?;
    }
    Ok((Value::Object(policy), words.join("; ")))
}

/// `value` read as `T`, a problem naming the path inside the file.
fn typed<T: serde::de::DeserializeOwned>(value: &Value, at: &str) -> Result<T, Inner> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = if inner == "." {
            at.to_string()
        } else {
            format!("{at}.{inner}")
        };
        (
            path,
            format!("{}; write it as Envoy's v3 API has it", e.into_inner()),
        )
    })
}

/// The route's words, its `timeout` as the deadline, and a `hedge_policy` or
/// `retry_policy_typed_config` refused.
fn route_settings(
    route: &Route,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    let name = route.name.map_or_else(|| route.at.clone(), quote);
    words.push(format!(
        "route {name} of virtual host {}",
        quote(route.host)
    ));
    let Some(action) = route.value.get("route").filter(|a| a.is_object()) else {
        return Err((
            route.at.clone(),
            "has no `route` action (a redirect or direct_response never reaches a cluster, so it never retries); name a route that forwards".into(),
        ));
    };
    let hedge = action
        .get("hedge_policy")
        .map(|v| (format!("{}.route.hedge_policy", route.at), v))
        .or_else(|| route.host_hedge.clone());
    if let Some((at, h)) = hedge
        && h.as_object().is_some_and(|m| !m.is_empty())
    {
        return Err((
            at,
            "is Envoy's hedging on per-try timeout, which retrystorm does not model (its hedge sends after a delay, and keeps the first attempt); remove it, and write policy.hedge beside envoy_config for hedging".into(),
        ));
    }
    let typed = action
        .get("retry_policy_typed_config")
        .map(|_| format!("{}.route.retry_policy_typed_config", route.at))
        .or_else(|| route.host_typed.as_ref().map(|(at, _)| at.clone()));
    if let Some(at) = typed {
        return Err((
            at,
            "is a retry policy extension, which retrystorm cannot read; remove it, and write the retries as a retry_policy".into(),
        ));
    }
    let at = format!("{}.route.timeout", route.at);
    let timeout = match action.get("timeout") {
        None => DEFAULT_ROUTE_TIMEOUT.to_string(),
        Some(Value::String(t)) => duration(t, &at, false)?,
        Some(_) => {
            return Err((
                at,
                "is not a protobuf duration string such as \"15s\"; write one".into(),
            ));
        }
    };
    if nanos(&timeout) == 0 {
        words.push("route timeout 0s: no deadline".into());
    } else {
        let default = if action.get("timeout").is_none() {
            " (Envoy's default)"
        } else {
            ""
        };
        words.push(format!(
            "route timeout {timeout}{default}: the deadline of the whole request, retries included"
        ));
        policy.insert("deadline".into(), json!(timeout));
    }
    Ok(())
}

/// The cluster's `circuit_breakers` (with its path), for a route's action at `at`: the one
/// `raw.cluster` names, else the route's own `cluster`; None for Envoy's defaults.
fn cluster<'a>(
    src: &Source<'a>,
    raw: &RawEnvoyConfig,
    action: &Value,
    at: &str,
) -> Result<Option<(String, &'a Value)>, Inner> {
    let name = match (&raw.cluster, action.get("cluster").and_then(Value::as_str)) {
        (Some(n), _) => n.clone(),
        (None, Some(n)) => n.to_string(),
        (None, None) if src.clusters.is_empty() => return Ok(None),
        (None, None) => {
            return Err((
                format!("{at}.route"),
                "names no single cluster (weighted_clusters, cluster_header?); name the one whose circuit breakers apply in envoy_config.cluster".into(),
            ));
        }
    };
    if src.kind == "a RouteConfiguration" {
        return match raw.cluster {
            Some(_) => Err((
                String::new(),
                "is a RouteConfiguration, which has no clusters; leave envoy_config.cluster out (Envoy's default circuit breaker applies), or give a bootstrap".into(),
            )),
            None => Ok(None),
        };
    }
    let found: Vec<_> = src
        .clusters
        .iter()
        .filter(|(_, c)| c.get("name").and_then(Value::as_str) == Some(&name))
        .collect();
    match found.as_slice() {
        [(c_at, c)] => Ok(c
            .get("circuit_breakers")
            .map(|v| (format!("{c_at}.circuit_breakers"), v))),
        [] => Err((
            "static_resources.clusters".into(),
            format!(
                "have no cluster named {} (from CDS?); write it in the file, or name another in envoy_config.cluster",
                quote(&name)
            ),
        )),
        [_, (c_at, _), ..] => Err((
            c_at.clone(),
            format!("is a second cluster named {}; rename one", quote(&name)),
        )),
    }
}

/// A protobuf duration already checked by `duration`, in nanoseconds.
fn nanos(text: &str) -> u128 {
    let number = text.trim_end_matches('s');
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let whole: u128 = whole.parse().unwrap_or(0);
    let fraction: u128 = format!("{fraction:0<9}").parse().unwrap_or(0);
    whole * 1_000_000_000 + fraction
}

/// Envoy's route `retry_policy` (config.route.v3.RetryPolicy). Keys retrystorm cannot model
/// are read only to be refused by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryPolicy {
    #[serde(alias = "retryOn")]
    retry_on: Option<String>,
    #[serde(alias = "numRetries")]
    num_retries: Option<u64>,
    #[serde(alias = "perTryTimeout")]
    per_try_timeout: Option<String>,
    #[serde(alias = "retryBackOff")]
    retry_back_off: Option<BackOff>,
    #[serde(alias = "retriableStatusCodes")]
    retriable_status_codes: Option<Vec<u64>>,
    #[serde(alias = "retryHostPredicate")]
    retry_host_predicate: Option<Vec<HostPredicate>>,
    #[serde(alias = "hostSelectionRetryMaxAttempts")]
    host_selection_retry_max_attempts: Option<u64>,
    per_try_idle_timeout: Option<Value>,
    retry_priority: Option<Value>,
    retriable_headers: Option<Value>,
    retriable_request_headers: Option<Value>,
    rate_limited_retry_back_off: Option<Value>,
    retry_options_predicates: Option<Value>,
}

/// `retry_back_off`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackOff {
    #[serde(alias = "baseInterval")]
    base_interval: Option<String>,
    #[serde(alias = "maxInterval")]
    max_interval: Option<String>,
}

/// One `retry_host_predicate` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostPredicate {
    name: String,
    /// Allowed, and empty for previous_hosts: read only so the file may write it.
    #[serde(alias = "typedConfig")]
    #[allow(dead_code)]
    typed_config: Option<Value>,
}

/// The keys of a retry_policy retrystorm cannot model, each with why and the fix.
fn refused(p: &RetryPolicy) -> Option<(&'static str, &'static str)> {
    let keys: [(bool, &str, &str); 6] = [
        (
            p.per_try_idle_timeout.is_some(),
            "per_try_idle_timeout",
            "retrystorm's answers come whole, with no idle time between bytes; remove it, or use per_try_timeout",
        ),
        (
            p.retry_priority.is_some(),
            "retry_priority",
            "retrystorm's replicas have no priority levels; remove it",
        ),
        (
            p.retriable_headers.is_some(),
            "retriable_headers",
            "retrystorm's answers carry no headers to match; list status codes in retriable_status_codes with retry_on retriable-status-codes",
        ),
        (
            p.retriable_request_headers.is_some(),
            "retriable_request_headers",
            "retrystorm's requests carry no headers to match; remove it",
        ),
        (
            p.rate_limited_retry_back_off.is_some(),
            "rate_limited_retry_back_off",
            "it waits exactly a reset header's time, which retrystorm does not model (retry.retry_after \"honor\" waits the longer of the backoff and Retry-After); remove it, and write retry.retry_after beside envoy_config",
        ),
        (
            p.retry_options_predicates.is_some(),
            "retry_options_predicates",
            "retrystorm has no upstream socket options; remove it",
        ),
    ];
    keys.into_iter()
        .find(|(set, _, _)| *set)
        .map(|(_, key, why)| (key, why))
}

/// One `retry_on` condition: the retrystorm outcomes it retries, or None for a condition
/// that matches no answer retrystorm models (with why).
fn condition(name: &str) -> Option<Result<&'static [&'static str], &'static str>> {
    let outcomes: &'static [&'static str] = match name {
        // A 5xx, a reset, and a per-try timeout (which resets the stream).
        "5xx" => &["timeout", "error", "rejected"],
        // 502, 503 and 504, and resets and per-try timeouts; a 500 is not one.
        "gateway-error" => &["timeout", "rejected"],
        "reset" => &["timeout"],
        "retriable-4xx" => &["conflict"],
        "retriable-status-codes" => &[],
        "connect-failure" | "reset-before-request" | "http3-post-connect-failure" => {
            return Some(Err("retrystorm has no connections to fail or reset"));
        }
        "refused-stream" => return Some(Err("retrystorm's servers never refuse a stream")),
        "envoy-ratelimited" => {
            return Some(Err(
                "retrystorm's servers are not Envoys: no answer carries x-envoy-ratelimited",
            ));
        }
        "retriable-headers" => {
            return Some(Err("retrystorm's answers carry no headers"));
        }
        grpc => {
            let code = grpc.to_ascii_uppercase().replace('-', "_");
            let known = [
                "CANCELLED",
                "DEADLINE_EXCEEDED",
                "INTERNAL",
                "RESOURCE_EXHAUSTED",
                "UNAVAILABLE",
            ];
            if !known.contains(&code.as_str()) {
                return None;
            }
            let (_, classes) = STATUS_CODES.iter().find(|(n, _)| *n == code)?;
            if classes.is_empty() {
                return Some(Err("a cancelled call is never retried in retrystorm"));
            }
            classes
        }
    };
    Some(Ok(outcomes))
}

/// A status code of `retriable_status_codes` as a retrystorm outcome, None for a code
/// retrystorm's servers never answer as a failure it retries.
fn status_outcome(code: u64) -> Option<&'static str> {
    match code {
        409 => Some("conflict"),
        429 => Some("throttled"),
        503 => Some("rejected"),
        500..=599 => Some("error"),
        _ => None,
    }
}

/// `retry_on` and `retriable_status_codes` at `at`: the outcomes in `retry_on`'s order, and
/// words (with the conditions that match nothing).
fn retry_on(p: &RetryPolicy, at: &str) -> Result<(Vec<&'static str>, Vec<String>), Inner> {
    let mut set: Vec<&'static str> = Vec::new();
    let mut words = Vec::new();
    let text = p.retry_on.as_deref().unwrap_or("");
    let names: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut codes = false;
    for name in &names {
        match condition(name) {
            None => {
                return Err((
                    format!("{at}.retry_on"),
                    format!(
                        "{} is not one of Envoy's retry conditions (5xx, gateway-error, reset, connect-failure, retriable-4xx, refused-stream, retriable-status-codes, retriable-headers, envoy-ratelimited, reset-before-request, http3-post-connect-failure, cancelled, deadline-exceeded, internal, resource-exhausted, unavailable); correct it",
                        quote(name)
                    ),
                ));
            }
            Some(Err(why)) => words.push(format!("{name} matches nothing ({why})")),
            Some(Ok(classes)) => {
                codes |= *name == "retriable-status-codes";
                set.extend(classes.iter().copied());
            }
        }
    }
    let listed = p.retriable_status_codes.as_deref().unwrap_or(&[]);
    if codes {
        for code in listed {
            match status_outcome(*code) {
                Some(o) => set.push(o),
                None => words.push(format!(
                    "status {code} matches nothing (a retrystorm server never answers it)"
                )),
            }
        }
    } else if !listed.is_empty() {
        words.push("retriable_status_codes ignored, as Envoy does without retriable-status-codes in retry_on".into());
    }
    let order = ["timeout", "error", "rejected", "throttled", "conflict"];
    let set: Vec<&str> = order.into_iter().filter(|o| set.contains(o)).collect();
    words.insert(
        0,
        format!(
            "retry_on {}: {}",
            quote(text),
            if set.is_empty() {
                "nothing".into()
            } else {
                set.join(", ")
            }
        ),
    );
    Ok((set, words))
}

/// A retry_policy into `policy.retry` and `timeout`; false when it retries nothing.
fn retry(
    p: &RetryPolicy,
    at: &str,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<bool, Inner> {
    if let Some((key, why)) = refused(p) {
        return Err((format!("{at}.{key}"), format!("is set, and {why}")));
    }
    let n = p.num_retries.unwrap_or(DEFAULT_NUM_RETRIES);
    if n >= MAX_ATTEMPTS {
        return Err((
            format!("{at}.num_retries"),
            format!(
                "is {n}, and retrystorm runs at most {MAX_ATTEMPTS} attempts; write at most {}",
                MAX_ATTEMPTS - 1
            ),
        ));
    }
    let (set, on_words) = retry_on(p, at)?;
    words.extend(on_words);
    if let Some(t) = &p.per_try_timeout {
        let t = duration(t, &format!("{at}.per_try_timeout"), false)?;
        if nanos(&t) == 0 {
            words.push("per_try_timeout 0s: none".into());
        } else {
            words.push(format!("per_try_timeout {t}: each attempt's timeout"));
            policy.insert("timeout".into(), json!(t));
        }
    }
    if set.is_empty() || n == 0 {
        words.push("1 attempt (no retry)".into());
        policy.insert("retry".into(), json!({"max_attempts": 1}));
        return Ok(false);
    }
    let default = if p.num_retries.is_none() {
        " (Envoy's default)"
    } else {
        ""
    };
    words.push(format!("num_retries {n}{default}: {} attempts", n + 1));
    let mut r = json!({
        "max_attempts": n + 1,
        "retry_on": set,
        "backoff": { "envoy": back_off(p.retry_back_off.as_ref(), at, words)? },
        "retry_after": "ignore",
    });
    host_predicates(p, at, &mut r, words)?;
    policy.insert("retry".into(), r);
    Ok(true)
}

/// `retry_back_off` as Envoy reads it: whole milliseconds, cut as Envoy cuts them.
fn back_off(b: Option<&BackOff>, at: &str, words: &mut Vec<String>) -> Result<Value, Inner> {
    let at = format!("{at}.retry_back_off");
    let ms = |text: &Option<String>, key: &str| -> Result<Option<u64>, Inner> {
        let Some(t) = text else { return Ok(None) };
        let t = duration(t, &format!("{at}.{key}"), true)?;
        let ms = u64::try_from(nanos(&t) / 1_000_000).unwrap_or(u64::MAX);
        if ms == 0 {
            return Err((
                format!("{at}.{key}"),
                format!(
                    "is {t}, below the 1 ms Envoy counts backoffs in; write at least \"0.001s\""
                ),
            ));
        }
        Ok(Some(ms))
    };
    if let Some(b) = b
        && b.base_interval.is_none()
    {
        return Err((
            at,
            "has no base_interval, which Envoy requires; add it".into(),
        ));
    }
    let base = ms(&b.and_then(|b| b.base_interval.clone()), "base_interval")?;
    let max = ms(&b.and_then(|b| b.max_interval.clone()), "max_interval")?;
    let base = base.unwrap_or(DEFAULT_BASE_INTERVAL_MS);
    let max_ms = max.unwrap_or(10 * base);
    if max_ms < base {
        return Err((
            format!("{at}.max_interval"),
            format!(
                "is {max_ms} ms, shorter than base_interval {base} ms, which Envoy refuses; make it at least as long"
            ),
        ));
    }
    let how = match (b.is_none(), max.is_none()) {
        (true, _) => " (Envoy's defaults)",
        (false, true) => " (max_interval 10 x base_interval, Envoy's default)",
        _ => "",
    };
    words.push(format!(
        "Envoy's backoff from {base}ms up to {max_ms}ms{how}"
    ));
    Ok(json!({ "base_interval": format!("{base}ms"), "max_interval": format!("{max_ms}ms") }))
}

/// `retry_host_predicate` and `host_selection_retry_max_attempts` into `retry`.
fn host_predicates(
    p: &RetryPolicy,
    at: &str,
    retry: &mut Value,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    let list = p.retry_host_predicate.as_deref().unwrap_or(&[]);
    for (i, h) in list.iter().enumerate() {
        if h.name != "envoy.retry_host_predicates.previous_hosts" {
            return Err((
                format!("{at}.retry_host_predicate[{i}].name"),
                format!(
                    "is {}, and retrystorm models only envoy.retry_host_predicates.previous_hosts; remove it",
                    quote(&h.name)
                ),
            ));
        }
    }
    match (list.is_empty(), p.host_selection_retry_max_attempts) {
        (false, n) => {
            let n = n.unwrap_or(1);
            words.push(format!(
                "retries avoid the previous hosts, picking again up to {n} times"
            ));
            retry["retry_host_predicate"] = json!(["previous_hosts"]);
            retry["host_selection_retry_max_attempts"] = json!(n);
        }
        (true, Some(_)) => words.push(
            "host_selection_retry_max_attempts ignored, as Envoy does without retry_host_predicate"
                .into(),
        ),
        (true, None) => {}
    }
    Ok(())
}

/// `circuit_breakers`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CircuitBreakers {
    #[serde(default)]
    thresholds: Vec<Thresholds>,
    per_host_thresholds: Option<Value>,
}

/// `circuit_breakers.thresholds[i]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Thresholds {
    priority: Option<String>,
    max_connections: Option<u64>,
    max_pending_requests: Option<u64>,
    max_requests: Option<u64>,
    max_retries: Option<u64>,
    retry_budget: Option<RetryBudget>,
    track_remaining: Option<bool>,
    max_connection_pools: Option<u64>,
}

/// `retry_budget`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryBudget {
    budget_percent: Option<Percent>,
    min_retry_concurrency: Option<u64>,
}

/// A `type.v3.Percent`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Percent {
    value: f64,
}

/// The cluster's DEFAULT-priority thresholds into `policy.budget` (Envoy's defaults without).
fn breakers(
    found: Option<(String, &Value)>,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    let (at, cb) = match found {
        Some((at, v)) => {
            let cb: CircuitBreakers = typed(v, &at)?;
            (at, cb)
        }
        None => (
            String::new(),
            CircuitBreakers {
                thresholds: Vec::new(),
                per_host_thresholds: None,
            },
        ),
    };
    if cb.per_host_thresholds.is_some() {
        words.push("per_host_thresholds not modelled (connection limits)".into());
    }
    let mut default = None;
    for (i, t) in cb.thresholds.iter().enumerate() {
        match t.priority.as_deref() {
            None | Some("DEFAULT") if default.is_none() => default = Some((i, t)),
            None | Some("DEFAULT") => words.push(format!("thresholds[{i}] ignored: Envoy uses the first DEFAULT one")),
            Some("HIGH") => words.push(format!("thresholds[{i}] (HIGH priority) not used: retrystorm's requests are DEFAULT priority")),
            Some(other) => {
                return Err((
                    format!("{at}.thresholds[{i}].priority"),
                    format!("is {}, not DEFAULT or HIGH; correct it", quote(other)),
                ));
            }
        }
    }
    let Some((i, t)) = default else {
        words.push(format!("no DEFAULT circuit breaker thresholds: Envoy's default, at most {DEFAULT_MAX_RETRIES} retries in flight"));
        policy.insert("budget".into(), json!({"max_retries": DEFAULT_MAX_RETRIES}));
        return Ok(());
    };
    threshold(t, &format!("{at}.thresholds[{i}]"), policy, words)
}

/// One DEFAULT thresholds entry: `retry_budget`, else `max_retries`, and the limits noted.
fn threshold(
    t: &Thresholds,
    at: &str,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    if let Some(b) = &t.retry_budget {
        let percent = b
            .budget_percent
            .as_ref()
            .map_or(super::policy::budget::DEFAULT_BUDGET_PERCENT, |p| p.value);
        if !(0.0..=100.0).contains(&percent) {
            return Err((
                format!("{at}.retry_budget.budget_percent.value"),
                format!(
                    "is {}, and a percent lies between 0 and 100; write 20 % as 20",
                    num(percent)
                ),
            ));
        }
        let min = b.min_retry_concurrency.unwrap_or(u64::from(
            super::policy::budget::DEFAULT_MIN_RETRY_CONCURRENCY,
        ));
        words.push(format!("circuit breaker retry_budget: {} % of the active requests, at least {min} retries in flight", num(percent)));
        if let Some(n) = t.max_retries {
            words.push(format!(
                "max_retries {n} ignored, as Envoy ignores it beside a retry_budget"
            ));
        }
        policy.insert(
            "budget".into(),
            json!({"retry_budget": {"budget_percent": percent, "min_retry_concurrency": min}}),
        );
    } else {
        let n = t.max_retries.unwrap_or(DEFAULT_MAX_RETRIES);
        let default = if t.max_retries.is_none() {
            " (Envoy's default)"
        } else {
            ""
        };
        words.push(format!(
            "circuit breaker max_retries {n}{default}: at most {n} retries in flight"
        ));
        policy.insert("budget".into(), json!({"max_retries": n}));
    }
    let limits: Vec<String> = [
        ("max_connections", t.max_connections),
        ("max_pending_requests", t.max_pending_requests),
        ("max_requests", t.max_requests),
        ("max_connection_pools", t.max_connection_pools),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
    .collect();
    if !limits.is_empty() {
        words.push(format!(
            "not modelled: {} (Envoy's connection pool limits; retrystorm sends every attempt)",
            limits.join(", ")
        ));
    }
    if t.track_remaining.is_some() {
        words.push("track_remaining ignored (statistics only)".into());
    }
    Ok(())
}

/// The words report.md says of a policy read from an Envoy config.
pub fn sentence(raw: &RawEnvoyConfig) -> Option<String> {
    raw.read_as
        .as_ref()
        .map(|w| format!("Envoy config, read {w}."))
}
