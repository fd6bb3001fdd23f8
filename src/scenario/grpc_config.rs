//! `policy.grpc_service_config`: a gRPC service config file read into retrystorm's own policy
//! settings, in one place: the raw setting a scenario writes, the raw types of the service
//! config JSON (gRFC A6 `retryPolicy`, `hedgingPolicy`, `retryThrottling`, a method's
//! `timeout`), gRPC's method lookup, the mapping onto `retry`, `budget`, `hedge` and
//! `deadline`, and the words report.md says of it.
//!
//! `config_file.rs` reads the file and expands the policy that names it (the file's settings
//! under the ones written beside it, what was understood in `read_as`); this file says what a
//! service config means.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::config_file::{ConfigKind, Inner};
use super::error::{quote, short};

/// gRFC A6: "maxAttempts ... values greater than 5 are treated as 5".
pub const GRPC_MAX_ATTEMPTS: u64 = 5;
/// grpc-go's service_config.go: `retryThrottling.maxTokens` lies in (0, 1000] (A6: above 0).
pub const GRPC_MAX_TOKENS: f64 = 1000.0;
/// gRFC A6: "Up to 3 decimal places are supported" in `tokenRatio`; gRPC C-core's
/// retry_service_config.cc ignores further ones.
pub const TOKEN_RATIO_DECIMALS: i32 = 3;

/// `policy.grpc_service_config`: which gRPC service config file, and which method's config.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGrpcServiceConfig {
    /// The service config JSON file, relative to the scenario file's folder.
    #[schemars(length(min = 1))]
    pub file: String,
    /// The gRPC service, fully qualified ("pkg.Service").
    #[schemars(length(min = 1))]
    pub service: String,
    /// The method ("Get"); without it the service-wide config, else the default one, applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Written by retrystorm: what it understood of the file (scenario.resolved.json). A
    /// config that has it is not read again: the settings beside it are the file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_as: Option<String>,
}

impl ConfigKind for RawGrpcServiceConfig {
    const KEY: &'static str = "grpc_service_config";

    fn file(&self) -> &str {
        &self.file
    }

    fn read_as(&mut self) -> &mut Option<String> {
        &mut self.read_as
    }

    fn parse(bytes: &[u8], shown: &str) -> Result<Value, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("{shown} is not valid JSON: {e}"))
    }

    fn import(&self, config: &Value) -> Result<(Value, String), Inner> {
        import(config, self)
    }
}

/// The top level of a gRPC service config; other keys (`loadBalancingConfig`, ...) are
/// gRPC's and play no part here.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServiceConfig {
    #[serde(default, alias = "method_config")]
    method_config: Vec<MethodConfig>,
    #[serde(default, alias = "retry_throttling")]
    retry_throttling: Option<RetryThrottling>,
}

/// One `methodConfig` entry; keys other than these (`waitForReady`, message sizes) play no
/// part here.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MethodConfig {
    #[serde(default)]
    name: Vec<Name>,
    timeout: Option<String>,
    #[serde(alias = "retry_policy")]
    retry_policy: Option<RetryPolicy>,
    #[serde(alias = "hedging_policy")]
    hedging_policy: Option<HedgingPolicy>,
}

/// A `methodConfig.name` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Name {
    #[serde(default)]
    service: String,
    #[serde(default)]
    method: String,
}

/// gRFC A6 `retryPolicy`: every key but `perAttemptRecvTimeout` is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RetryPolicy {
    #[serde(alias = "max_attempts")]
    max_attempts: Option<u64>,
    #[serde(alias = "initial_backoff")]
    initial_backoff: Option<String>,
    #[serde(alias = "max_backoff")]
    max_backoff: Option<String>,
    #[serde(alias = "backoff_multiplier")]
    backoff_multiplier: Option<f64>,
    #[serde(alias = "retryable_status_codes")]
    retryable_status_codes: Option<Vec<Code>>,
    #[serde(alias = "per_attempt_recv_timeout")]
    per_attempt_recv_timeout: Option<String>,
}

/// gRFC A6 `hedgingPolicy`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct HedgingPolicy {
    #[serde(alias = "max_attempts")]
    max_attempts: Option<u64>,
    #[serde(alias = "hedging_delay")]
    hedging_delay: Option<String>,
    #[serde(alias = "non_fatal_status_codes")]
    non_fatal_status_codes: Option<Vec<Code>>,
}

/// gRFC A6 `retryThrottling`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RetryThrottling {
    #[serde(alias = "max_tokens")]
    max_tokens: Option<f64>,
    #[serde(alias = "token_ratio")]
    token_ratio: Option<f64>,
}

/// A status code as the config writes it: its name or its number.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Code {
    Name(String),
    Number(u64),
}

/// gRPC's status codes by number (grpc/grpc doc/statuscodes.md), each with the retrystorm
/// outcomes it stands for: the outcome classes of docs/format.md section 7 that a gRPC
/// server or client reports with that code. None: a code retrystorm counts `permanent` (or
/// `OK`), which is never retried.
pub const STATUS_CODES: [(&str, &[&str]); 17] = [
    ("OK", &[]),
    ("CANCELLED", &[]),
    ("UNKNOWN", &["error"]),
    ("INVALID_ARGUMENT", &[]),
    ("DEADLINE_EXCEEDED", &["timeout"]),
    ("NOT_FOUND", &[]),
    ("ALREADY_EXISTS", &[]),
    ("PERMISSION_DENIED", &[]),
    ("RESOURCE_EXHAUSTED", &["throttled"]),
    ("FAILED_PRECONDITION", &[]),
    ("ABORTED", &["conflict"]),
    ("OUT_OF_RANGE", &[]),
    ("UNIMPLEMENTED", &[]),
    ("INTERNAL", &["error"]),
    ("UNAVAILABLE", &["rejected", "error"]),
    ("DATA_LOSS", &[]),
    ("UNAUTHENTICATED", &[]),
];

/// The codes at `at` as retrystorm outcomes (in the order of `retry_on`'s default) and in
/// words ("UNAVAILABLE (rejected, error)").
pub(super) fn outcomes(
    codes: &[Code],
    at: &str,
) -> Result<(Vec<&'static str>, Vec<String>), Inner> {
    let mut set = Vec::new();
    let mut words = Vec::new();
    for (i, code) in codes.iter().enumerate() {
        let found = match code {
            Code::Name(name) => STATUS_CODES.iter().position(|(n, _)| n == name),
            Code::Number(n) => usize::try_from(*n).ok().filter(|n| *n < STATUS_CODES.len()),
        };
        let Some(number) = found else {
            let value = match code {
                Code::Name(n) => quote(n),
                Code::Number(n) => n.to_string(),
            };
            return Err((
                format!("{at}[{i}]"),
                format!(
                    "{value} is not a gRPC status code; write a name such as \"UNAVAILABLE\" (upper case, as grpc/grpc doc/statuscodes.md spells it) or its number 0 to 16"
                ),
            ));
        };
        let (name, classes) = STATUS_CODES[number];
        if number == 0 {
            return Err((
                format!("{at}[{i}]"),
                "OK is a success, never retried; remove it".into(),
            ));
        }
        set.extend(classes.iter().copied());
        words.push(if classes.is_empty() {
            format!("{name} (permanent in retrystorm: never retried)")
        } else {
            format!("{name} ({})", classes.join(", "))
        });
    }
    let order = ["timeout", "error", "rejected", "throttled", "conflict"];
    Ok((
        order.into_iter().filter(|o| set.contains(o)).collect(),
        words,
    ))
}

/// A protobuf JSON duration ("0.1s", "2s", "0.000001s") checked, as retrystorm's duration
/// text (the same string, which retrystorm reads as it is).
pub(super) fn duration(text: &str, at: &str, positive: bool) -> Result<String, Inner> {
    let bad = |why: &str| {
        Err((
            at.to_string(),
            format!(
                "{} {why}; write a protobuf JSON duration: seconds with up to 9 decimals and a final \"s\", such as \"0.1s\"",
                quote(text)
            ),
        ))
    };
    let Some(number) = text.strip_suffix('s') else {
        return bad("does not end in \"s\"");
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return bad("is not a non-negative number of seconds");
    }
    if fraction.len() > 9 || whole.len() > 12 {
        return bad("has more than 9 decimals or more than 12 digits of seconds");
    }
    if positive && !text.chars().any(|c| ('1'..='9').contains(&c)) {
        return bad("is zero, and gRFC A6 requires it to be above zero");
    }
    Ok(text.to_string())
}

/// The config's settings for the method `raw` names, as a retrystorm policy object, and the
/// words of what was understood.
fn import(config: &Value, raw: &RawGrpcServiceConfig) -> Result<(Value, String), Inner> {
    let config: ServiceConfig = serde_path_to_error::deserialize(config).map_err(|e| {
        let inner = e.path().to_string();
        (
            if inner == "." { String::new() } else { inner },
            format!(
                "{}; gRFC A6 allows only its own keys in a retryPolicy, hedgingPolicy and retryThrottling (maxAttempts, initialBackoff, maxBackoff, backoffMultiplier, retryableStatusCodes; maxAttempts, hedgingDelay, nonFatalStatusCodes; maxTokens, tokenRatio)",
                e.into_inner()
            ),
        )
    })?;
    let method = raw.method.as_deref().unwrap_or("");
    let (index, matched) = lookup(&config.method_config, &raw.service, method)?;
    let mut policy = Map::new();
    let mut words = vec![format!(
        "from {}, method {}/{} ({matched})",
        raw.file,
        raw.service,
        if method.is_empty() { "*" } else { method }
    )];
    match index {
        Some(i) => method_settings(&config.method_config[i], i, &mut policy, &mut words)?,
        None => no_retries(&mut policy, &mut words),
    }
    if let Some(t) = &config.retry_throttling {
        throttling(t, &mut policy, &mut words)?;
    }
    Ok((Value::Object(policy), words.join("; ")))
}

/// gRPC's method lookup: the entry naming the service and method, else the one naming the
/// service alone, else the default (an empty name). Names must be unique, and a name with a
/// method needs its service (grpc-go's service_config.go).
fn lookup(
    configs: &[MethodConfig],
    service: &str,
    method: &str,
) -> Result<(Option<usize>, &'static str), Inner> {
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, c) in configs.iter().enumerate() {
        for (j, n) in c.name.iter().enumerate() {
            let at = format!("methodConfig[{i}].name[{j}]");
            if n.service.is_empty() && !n.method.is_empty() {
                return Err((
                    at,
                    format!(
                        "names method {} without a service, which gRPC refuses; add \"service\"",
                        quote(&n.method)
                    ),
                ));
            }
            if let Some(first) = seen.insert((&n.service, &n.method), i) {
                return Err((
                    at,
                    format!(
                        "names the same method as methodConfig[{first}], which gRPC refuses as a duplicate; keep one"
                    ),
                ));
            }
        }
    }
    let exact = (!method.is_empty())
        .then(|| seen.get(&(service, method)))
        .flatten();
    if let Some(&i) = exact {
        return Ok((Some(i), "its own methodConfig"));
    }
    if let Some(&i) = seen.get(&(service, "")) {
        return Ok((Some(i), "the service's methodConfig"));
    }
    if let Some(&i) = seen.get(&("", "")) {
        return Ok((Some(i), "the default methodConfig"));
    }
    Ok((None, "no methodConfig applies"))
}

/// A methodConfig's retry or hedging policy and timeout, into `policy`.
fn method_settings(
    c: &MethodConfig,
    i: usize,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    let at = format!("methodConfig[{i}]");
    if c.retry_policy.is_some() && c.hedging_policy.is_some() {
        return Err((
            at,
            "sets both retryPolicy and hedgingPolicy, and gRFC A6 allows only one; remove one"
                .into(),
        ));
    }
    if let Some(t) = &c.timeout {
        let d = duration(t, &format!("{at}.timeout"), true)?;
        words.push(format!(
            "deadline {d} (the call's whole time, retries included)"
        ));
        policy.insert("deadline".into(), json!(d));
    }
    if let Some(r) = &c.retry_policy {
        retry(r, &format!("{at}.retryPolicy"), policy, words)?;
    }
    if let Some(h) = &c.hedging_policy {
        hedging(h, &format!("{at}.hedgingPolicy"), policy, words)?;
    }
    if c.retry_policy.is_none() && c.hedging_policy.is_none() {
        no_retries(policy, words);
    }
    Ok(())
}

/// gRPC without a retryPolicy or hedgingPolicy makes one attempt (retrystorm's default is 3).
fn no_retries(policy: &mut Map<String, Value>, words: &mut Vec<String>) {
    words.push("no retryPolicy: 1 attempt".into());
    policy.insert("retry".into(), json!({"max_attempts": 1}));
}

/// A required key's value, or the problem that it is missing.
fn required<'a, T>(value: &'a Option<T>, at: &str, key: &str) -> Result<&'a T, Inner> {
    value.as_ref().ok_or_else(|| {
        (
            at.to_string(),
            format!("has no {key}, which gRFC A6 requires; add it"),
        )
    })
}

/// maxAttempts at `at`: at least 2, above 5 read as 5; (attempts, words).
fn attempts(value: u64, at: &str) -> Result<(u64, String), Inner> {
    if value < 2 {
        return Err((
            format!("{at}.maxAttempts"),
            format!(
                "is {value}, and gRFC A6 requires 2 or more (1 would be no retry at all); write 2 to 5, or remove the policy"
            ),
        ));
    }
    let n = value.min(GRPC_MAX_ATTEMPTS);
    let capped = if value > n {
        format!(" (capped from {value}, as gRFC A6 caps maxAttempts at {GRPC_MAX_ATTEMPTS})")
    } else {
        String::new()
    };
    Ok((n, capped))
}

/// A retryPolicy into `policy.retry` (and `timeout` from perAttemptRecvTimeout).
fn retry(
    r: &RetryPolicy,
    at: &str,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    let (n, capped) = attempts(*required(&r.max_attempts, at, "maxAttempts")?, at)?;
    let initial = duration(
        required(&r.initial_backoff, at, "initialBackoff")?,
        &format!("{at}.initialBackoff"),
        true,
    )?;
    let max = duration(
        required(&r.max_backoff, at, "maxBackoff")?,
        &format!("{at}.maxBackoff"),
        true,
    )?;
    let m = *required(&r.backoff_multiplier, at, "backoffMultiplier")?;
    if !(1.0..=1e9).contains(&m) {
        return Err((
            format!("{at}.backoffMultiplier"),
            format!(
                "is {m}; gRFC A6 allows any value above 0, but retrystorm models backoffs that do not shrink: write 1 or more"
            ),
        ));
    }
    let codes = required(&r.retryable_status_codes, at, "retryableStatusCodes")?;
    let (retry_on, code_words) = outcomes(codes, &format!("{at}.retryableStatusCodes"))?;
    if retry_on.is_empty() {
        return Err((
            format!("{at}.retryableStatusCodes"),
            "lists no status code retrystorm can retry (A6 requires a non-empty list; codes such as NOT_FOUND are permanent here); list e.g. \"UNAVAILABLE\"".into(),
        ));
    }
    // min(initial x m^(n-1), max) is min(min(initial, max) x m^(n-1), max) when m >= 1:
    // retrystorm's base may not exceed its cap.
    let shorter = |a: &str, b: &str| {
        let secs = |s: &str| s.trim_end_matches('s').parse::<f64>().unwrap_or(0.0);
        if secs(a) <= secs(b) {
            a.to_string()
        } else {
            b.to_string()
        }
    };
    let base = shorter(&initial, &max);
    words.push(format!(
        "{n} attempts{capped}, the nth retry after random(0, min({initial} x {}^(n-1), {max}))",
        super::error::num(m)
    ));
    words.push(format!("retry on {}", code_words.join(", ")));
    policy.insert(
        "retry".into(),
        json!({
            "max_attempts": n,
            "retry_on": retry_on,
            "backoff": {"base": base, "multiplier": m, "cap": max, "jitter": "full"},
            "retry_after": "honor",
        }),
    );
    if let Some(t) = &r.per_attempt_recv_timeout {
        let d = duration(t, &format!("{at}.perAttemptRecvTimeout"), true)?;
        words.push(format!("attempts time out after {d}"));
        policy.insert("timeout".into(), json!(d));
    }
    Ok(())
}

/// A hedgingPolicy into `policy.hedge`, with no retries (A6: hedging or retry, not both).
fn hedging(
    h: &HedgingPolicy,
    at: &str,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    let (n, capped) = attempts(*required(&h.max_attempts, at, "maxAttempts")?, at)?;
    let delay = duration(
        h.hedging_delay.as_deref().unwrap_or("0s"),
        &format!("{at}.hedgingDelay"),
        false,
    )?;
    if !delay.chars().any(|c| ('1'..='9').contains(&c)) {
        return Err((
            format!("{at}.hedgingDelay"),
            format!(
                "is {} (0s, A6's default, sends every copy at once), and retrystorm hedges after a delay above 0; write one, such as \"0.01s\"",
                quote(&delay)
            ),
        ));
    }
    let codes = required(&h.non_fatal_status_codes, at, "nonFatalStatusCodes")?;
    if codes.is_empty() {
        return Err((
            format!("{at}.nonFatalStatusCodes"),
            "is empty, and gRFC A6 requires it non-empty; list e.g. \"UNAVAILABLE\"".into(),
        ));
    }
    let (retry_on, code_words) = outcomes(codes, &format!("{at}.nonFatalStatusCodes"))?;
    words.push(format!(
        "hedged: {n} attempts{capped}, one every {delay}, no retries"
    ));
    words.push(format!("non-fatal {}", code_words.join(", ")));
    policy.insert(
        "retry".into(),
        json!({"max_attempts": 1, "retry_on": retry_on}),
    );
    policy.insert("hedge".into(), json!({"delay": delay, "max_hedges": n - 1}));
    Ok(())
}

/// retryThrottling into `policy.budget.token_bucket`, per client (gRPC keeps the bucket in
/// the client process, per server name).
fn throttling(
    t: &RetryThrottling,
    policy: &mut Map<String, Value>,
    words: &mut Vec<String>,
) -> Result<(), Inner> {
    let at = "retryThrottling";
    let max = *required(&t.max_tokens, at, "maxTokens")?;
    if !(max > 0.0 && max <= GRPC_MAX_TOKENS) {
        return Err((
            format!("{at}.maxTokens"),
            format!(
                "is {}, and gRFC A6 requires it above 0 and at most 1000; write e.g. 10",
                super::error::num(max)
            ),
        ));
    }
    let written = *required(&t.token_ratio, at, "tokenRatio")?;
    let scale = 10f64.powi(TOKEN_RATIO_DECIMALS);
    // A6: "tokenRatio ... supports up to 3 decimal places"; gRPC C-core drops the rest.
    let ratio = (written * scale + 1e-9).floor() / scale;
    if !(ratio > 0.0 && ratio.is_finite()) {
        return Err((
            format!("{at}.tokenRatio"),
            format!(
                "is {} (read to 3 decimals as gRFC A6 does: {}), and it must be above 0; write e.g. 0.1",
                short(&json!(written)),
                super::error::num(ratio)
            ),
        ));
    }
    let note = if ratio != written {
        format!(
            " (read from {} to 3 decimals, as gRFC A6 does)",
            super::error::num(written)
        )
    } else {
        String::new()
    };
    words.push(format!(
        "retry throttling {} tokens, ratio {}{note}, per client",
        super::error::num(max),
        super::error::num(ratio)
    ));
    policy.insert(
        "budget".into(),
        json!({"token_bucket": {"max_tokens": max, "token_ratio": ratio}}),
    );
    Ok(())
}

/// The words report.md says of a policy read from a config.
pub fn sentence(raw: &RawGrpcServiceConfig) -> Option<String> {
    raw.read_as
        .as_ref()
        .map(|w| format!("gRPC service config, read {w}."))
}
