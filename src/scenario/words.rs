//! The scenario in words, for report.md's "What this models": one sentence per part of a
//! scenario (clients, network, servers or a call graph, and the policies), built from its
//! settings alone. Each setting's words live beside its rules (`sentence` and `phrase` in
//! `policy/`, `server/` and `clients.rs`); this module strings them together. Names are
//! Markdown-escaped by [`escape`] (in `phrase`, the small words the settings share), which
//! report.md uses for every name it prints.

use super::phrase::{capitalized, escape, words};
use super::policy::{
    breaker, budget, bulkhead, client_rate_limiter, fallback, hedge, idempotency_key, preset,
    retry, throttle,
};
use super::{Policy, Scenario};
use super::{clients, server};

/// The scenario in words, one sentence per part.
pub fn describe(s: &Scenario) -> Vec<String> {
    let mut lines = clients::sentences(s);
    if !s.network.latency.is_zero() {
        lines.push(format!(
            "Network: every one-way message takes {}.",
            words(&s.network.latency)
        ));
    }
    if s.is_graph() {
        lines.extend(graph_lines(s));
    } else {
        lines.extend(server::lines(
            s.server(),
            Some(s.policy.retry.retry_after),
            None,
        ));
        lines.extend(offered_load(s));
    }
    let mut policy = policy_lines(&s.policy);
    if s.is_graph() {
        // In a call graph the policy above is the clients' towards the entry; the calls
        // between services have theirs in the graph's lines.
        let entry = format!("**{}**", escape(&s.services[0].name));
        for line in &mut policy {
            let mut chars = line.chars();
            let first = chars.next().map(|c| c.to_lowercase().to_string());
            *line = format!(
                "Clients to {entry}: {}{}",
                first.unwrap_or_default(),
                chars.as_str()
            );
        }
    }
    lines.extend(policy);
    // A group with a policy of its own calls with it instead, as a whole.
    for (group, own) in s
        .clients
        .iter()
        .filter_map(|g| Some((g, g.policy.as_ref()?)))
    {
        let who = format!("**{}**", escape(&group.name));
        lines.extend(policy_lines(own).into_iter().map(|line| {
            let mut chars = line.chars();
            let first = chars.next().map(|c| c.to_lowercase().to_string());
            format!(
                "Clients of group {who}, instead: {}{}",
                first.unwrap_or_default(),
                chars.as_str()
            )
        }));
    }
    lines
}

/// An open workload's offered load at a server with a worker limit, the first number a
/// queueing reader asks for: rho = arrival rate x mean service time / workers, before retries.
fn offered_load(s: &Scenario) -> Option<String> {
    let [group] = &s.clients[..] else {
        return None;
    };
    let clients::Workload::Open(profile) = &group.workload else {
        return None;
    };
    let server::ServerKind::Queue(q) = &s.server().kind else {
        return None;
    };
    let workers = q.concurrency?;
    let mean_ms = q.service_time.mean_secs() * 1e3;
    let rho = profile.base_rate * mean_ms / 1e3 / f64::from(workers);
    let at = if profile.steps.is_empty() {
        ""
    } else {
        " at the base rate"
    };
    Some(format!(
        "Offered load (rho){at}: {} requests/s x {} ms mean service time / {workers} worker{} = {rho:.2} before retries; each retry adds to it.",
        profile.base_rate,
        (mean_ms * 1e3).round() / 1e3,
        if workers == 1 { "" } else { "s" },
    ))
}

/// The clients' policy, one sentence per part: timeout, deadline, attempts, budget, breaker,
/// backoff, then hedging, idempotency and throttling.
fn policy_lines(p: &Policy) -> Vec<String> {
    let mut lines = Vec::new();
    lines.extend(p.preset.map(preset::sentence));
    lines.extend(p.read_from.clone());
    if let Some(t) = p.timeout {
        lines.push(format!("Attempts time out after {t}."));
    }
    if let Some(d) = p.deadline {
        lines.push(format!("Requests give up {d} after they start (deadline)."));
    }
    let (attempts, backoff) = retry::sentences(&p.retry);
    lines.push(attempts);
    lines.extend(p.budget.as_ref().map(budget::sentence));
    lines.extend(p.breaker.as_ref().map(breaker::sentence));
    lines.extend(backoff);
    lines.extend(
        repeat_words(p)
            .iter()
            .map(|part| format!("{}.", capitalized(part))),
    );
    lines
}

/// A call graph in words: who calls whom and how often, each service's server, and each
/// call's policy. The clients' own policy towards the entry follows in [`describe`].
fn graph_lines(s: &Scenario) -> Vec<String> {
    let name = |i: usize| {
        s.services
            .get(i)
            .map_or("?".to_string(), |x| format!("**{}**", escape(&x.name)))
    };
    let mut lines = Vec::new();
    let mut calls = Vec::new();
    for (i, service) in s.services.iter().enumerate() {
        if service.calls.is_empty() {
            continue;
        }
        let targets: Vec<String> = service
            .calls
            .iter()
            .map(|c| {
                if c.fraction >= 1.0 {
                    format!("{} on every attempt", name(c.to))
                } else {
                    format!("{} for {} % of requests", name(c.to), 100.0 * c.fraction)
                }
            })
            .collect();
        let how = match (service.calls.len(), service.parallel) {
            (1, _) => "",
            (_, true) => ", all at once, waiting for every answer",
            (_, false) => ", one after another, stopping at the first that fails for good",
        };
        calls.push(format!("{} calls {}{how}", name(i), join_words(&targets)));
    }
    let routes = s
        .services
        .iter()
        .flat_map(|x| &x.calls)
        .any(|c| c.fraction < 1.0);
    lines.push(format!(
        "Call graph: the clients send their requests to {}, the entry service; {}. A service answers an attempt once its own calls have ended{}.",
        name(0),
        calls.join("; "),
        if routes {
            "; a call made for a share of requests is one of its caller's routes, drawn once per request"
        } else {
            ""
        }
    ));
    for (i, service) in s.services.iter().enumerate() {
        let who = if i == 0 {
            format!("{} (entry)", name(i))
        } else {
            name(i)
        };
        let retry_after = (i == 0).then_some(s.policy.retry.retry_after);
        lines.extend(server::lines(&service.server, retry_after, Some(&who)));
    }
    for (i, service) in s.services.iter().enumerate() {
        for c in &service.calls {
            lines.push(format!(
                "Calls from {} to {}: {}.",
                name(i),
                name(c.to),
                call_policy_words(&c.policy)
            ));
        }
    }
    lines
}

/// Words joined as a sentence lists them: "a", "a and b", "a, b and c".
fn join_words(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A call's policy in one sentence: timeout, attempts and backoff, budget and breaker,
/// bulkhead, fallback and deadline.
fn call_policy_words(p: &super::Policy) -> String {
    let mut parts = Vec::new();
    parts.extend(
        p.preset
            .map(|p| format!("preset `{}` ({})", p.name(), p.title())),
    );
    parts.push(match p.timeout {
        Some(t) => format!("attempts time out after {t}"),
        None => "no timeout".to_string(),
    });
    if let Some(d) = p.deadline {
        parts.push(format!("the call gives up {d} after it starts"));
    }
    parts.extend(
        p.read_from
            .as_ref()
            .map(|g| g.trim_end_matches('.').to_string()),
    );
    parts.extend(retry::phrases(&p.retry));
    parts.extend(p.budget.as_ref().map(budget::phrase));
    parts.extend(p.breaker.as_ref().map(|_| "a circuit breaker".to_string()));
    parts.extend(p.bulkhead.as_ref().map(bulkhead::phrase));
    parts.extend(p.fallback.as_ref().map(fallback::phrase));
    if p.propagate_deadline {
        parts.push("the caller's remaining time caps the call's deadline".to_string());
    }
    parts.extend(repeat_words(p));
    parts.join("; ")
}

/// A policy's hedging, idempotency, idempotency keys and adaptive throttling in words, one
/// phrase each; none for a policy that sets none of them.
fn repeat_words(p: &Policy) -> Vec<String> {
    let mut parts = Vec::new();
    parts.extend(p.hedge.as_ref().map(hedge::phrase));
    if !p.idempotent {
        parts.push(
            "not idempotent: repeated executions are counted as duplicate side effects".to_string(),
        );
    }
    parts.extend(p.idempotency_key.as_ref().map(idempotency_key::phrase));
    parts.extend(p.adaptive_throttle.as_ref().map(throttle::phrase));
    parts.extend(p.client_rate_limiter.map(client_rate_limiter::phrase));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimDuration;
    use crate::scenario::phrase::percent;
    use crate::scenario::{HedgeDelay, LoadOptions};

    fn scenario(text: &str) -> Scenario {
        let e = crate::scenario::load_str(text, "s.json", &LoadOptions::default()).unwrap();
        e.points[0].variants[0].scenario.clone()
    }

    /// "What this models" gives the offered load of an open workload at a server with
    /// workers, the number a queueing reader checks first; a closed workload has none.
    #[test]
    fn an_open_workload_states_its_offered_load() {
        let text = |workload: &str, workers: u32| {
            format!(
                r#"{{"name": "s", "duration": "1s", "clients": {{"count": 1, "workload": {workload}}},
                    "server": {{"concurrency": {workers}, "service_time": {{"exponential": {{"mean": "10ms"}}}}}}}}"#
            )
        };
        let lines = describe(&scenario(&text(r#"{"open": {"rate_per_s": 700}}"#, 10)));
        let line = "Offered load (rho): 700 requests/s x 10 ms mean service time / 10 workers = 0.70 before retries; each retry adds to it.";
        assert!(lines.iter().any(|l| l == line), "{lines:#?}");
        let one = describe(&scenario(&text(r#"{"open": {"rate_per_s": 90}}"#, 1)));
        assert!(
            one.iter().any(|l| l.contains("/ 1 worker = 0.90")),
            "{one:#?}"
        );
        let closed = describe(&scenario(&text(r#"{"closed": {}}"#, 10)));
        assert!(
            !closed.iter().any(|l| l.contains("Offered load")),
            "{closed:#?}"
        );
    }

    #[test]
    fn hedging_and_idempotency_are_described_in_words() {
        let s = scenario(
            r#"{"name": "s", "duration": "1s",
                "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}},
                "server": {"service_time": {"constant": "1ms"}},
                "policy": {"hedge": {"delay": "10ms", "budget": 0.05, "cancel": true},
                           "idempotent": false,
                           "idempotency_key": {"ttl": "24h", "cost": "1ms"}}}"#,
        );
        let lines = describe(&s);
        for line in [
            "Hedged after 10ms, at most 1 hedge per attempt, hedges capped at 5 % of calls, abandoned attempts cancelled.",
            "Not idempotent: repeated executions are counted as duplicate side effects.",
            "Idempotency keys remembered for 24h, a repeat answered in 1ms.",
        ] {
            assert!(lines.iter().any(|l| l == line), "{line} not in {lines:#?}");
        }
        assert_eq!(
            call_policy_words(&s.policy),
            "no timeout; up to 3 attempts; retries at once; hedged after 10ms, at most 1 hedge per attempt, hedges capped at 5 % of calls, abandoned attempts cancelled; not idempotent: repeated executions are counted as duplicate side effects; idempotency keys remembered for 24h, a repeat answered in 1ms"
        );
        let mut p = s.policy.clone();
        p.hedge = Some(crate::scenario::HedgeConfig {
            delay: HedgeDelay::Percentile {
                quantile: 0.999,
                window: 500,
            },
            max_hedges: 2,
            cancel: false,
            budget: None,
        });
        p.idempotent = true;
        p.idempotency_key = Some(crate::scenario::IdempotencyKey {
            ttl: SimDuration::from_secs(3600),
            cost: SimDuration::ZERO,
        });
        assert_eq!(
            repeat_words(&p),
            [
                "hedged after the p99.9 latency of the last 500 answered attempts, at most 2 hedges per attempt",
                "idempotency keys remembered for 1h, a repeat answered at once",
            ]
        );
        assert_eq!(percent(0.05), "5");
        assert_eq!(percent(0.125), "12.5");
        assert_eq!(percent(1.0), "100");
    }

    #[test]
    fn a_policy_without_hedges_or_keys_has_no_words_for_them() {
        let s = scenario(
            r#"{"name": "s", "duration": "1s",
                "clients": {"count": 1, "workload": {"open": {"rate_per_s": 10}}},
                "server": {"service_time": {"constant": "1ms"}},
                "policy": {"idempotency_key": false, "idempotent": true}}"#,
        );
        assert!(repeat_words(&s.policy).is_empty());
        let lines = describe(&s).join("\n");
        assert!(
            !lines.contains("edged") && !lines.contains("dempoten"),
            "{lines}"
        );
    }
}
