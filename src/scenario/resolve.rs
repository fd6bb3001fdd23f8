//! A validated [`Scenario`] written back in the scenario syntax with every default filled in,
//! for `scenario.resolved.json`: what ran, not what was typed. One server is written as
//! `server` (as it always was, byte for byte); a call graph as `services`, the entry first,
//! with `clients.entry`. Either loads again as a scenario (`retrystorm report` does).

use serde_json::{Map, Value, json};

use crate::engine::SimTime;
use crate::model::{
    Backoff, BreakerConfig, BreakerMode, BreakerWindow, BudgetConfig, BudgetKind, Discipline, Dist,
    Fault, FaultEffect, Outage,
};

use super::units::percentile_text;
use super::{
    Experiment, HedgeConfig, HedgeDelay, Policy, RetryAfter, Scenario, Server, ServerKind, Service,
    Workload,
};

/// The resolved form of an experiment: file-level settings, the sweep (with its second axis,
/// if any), and every variant (at the first sweep point) in full.
pub fn resolved_json(e: &Experiment) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(e.name));
    if let Some(d) = &e.description {
        out.insert("description".into(), json!(d));
    }
    out.insert("seed".into(), json!(e.seed));
    out.insert("replications".into(), json!(e.replications));
    out.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
    if let Some(s) = &e.sweep {
        let mut sweep = json!({"path": s.path, "label": s.label, "values": s.values});
        if let Some(v) = &s.base_value {
            // The value the scenario itself has there: figures of one sweep value show it.
            sweep["base_value"] = v.clone();
        }
        if let Some(second) = &s.second {
            let mut axis =
                json!({"path": second.path, "label": second.label, "values": second.values});
            if let Some(v) = &second.base_value {
                axis["base_value"] = v.clone();
            }
            sweep["second"] = axis;
        }
        out.insert("sweep".into(), sweep);
    }
    let variants: Vec<Value> = e.points[0]
        .variants
        .iter()
        .map(|v| json!({"name": v.name, "scenario": scenario_json(&v.scenario)}))
        .collect();
    out.insert("variants".into(), Value::Array(variants));
    Value::Object(out)
}

fn scenario_json(s: &Scenario) -> Value {
    let mut out = Map::new();
    out.insert("duration".into(), json!(s.duration.to_string()));
    if let Some(t) = s.max_time {
        out.insert("max_time".into(), json!(t.to_string()));
    }
    let workload = match &s.clients.workload {
        Workload::Open(p) => {
            let profile: Vec<Value> = p
                .steps
                .iter()
                .map(|st| json!({"at": st.at.to_string(), "rate_per_s": st.rate_per_s, "ramp": st.ramp}))
                .collect();
            json!({"open": {"rate_per_s": p.base_rate, "profile": profile}})
        }
        Workload::Closed(c) => {
            let mut closed = Map::new();
            if let Some(k) = c.requests_per_client {
                closed.insert("requests_per_client".into(), json!(k));
            }
            closed.insert("think_time".into(), dist_json(&c.think_time));
            closed.insert("start".into(), dist_json(&c.start));
            json!({ "closed": closed })
        }
    };
    out.insert(
        "clients".into(),
        json!({"count": s.clients.count, "workload": workload}),
    );
    out.insert(
        "network".into(),
        json!({"latency": dist_json(&s.network.latency)}),
    );
    if s.is_graph() {
        // A call graph names its entry and writes every service under its name, the entry
        // first; a single server keeps the form it always had.
        if let Some(clients) = out.get_mut("clients") {
            clients["entry"] = json!(s.services[0].name);
        }
        let services: Map<String, Value> = s
            .services
            .iter()
            .map(|service| (service.name.clone(), service_json(s, service)))
            .collect();
        out.insert("services".into(), Value::Object(services));
    } else {
        out.insert("server".into(), server_json(s.server()));
    }
    out.insert("policy".into(), policy_json(&s.policy, false));
    out.insert("metrics".into(), json!({"bucket": s.bucket.to_string()}));
    out.insert(
        "limits".into(),
        json!({"max_events": s.limits.max_events, "max_in_flight": s.limits.max_in_flight}),
    );
    Value::Object(out)
}

/// A serving discipline: a word, or the shedding disciplines with their settings.
fn discipline_json(d: Discipline) -> Value {
    match d {
        Discipline::Fifo => json!("fifo"),
        Discipline::Lifo => json!("lifo"),
        Discipline::Codel { target, interval } => json!({
            "codel": {"target": target.to_string(), "interval": interval.to_string()}
        }),
        Discipline::AdaptiveLifo { interval } => {
            json!({"adaptive_lifo": {"interval": interval.to_string()}})
        }
    }
}

/// A server's settings, every default filled in.
fn server_json(s: &Server) -> Value {
    let server = match &s.kind {
        ServerKind::Queue(q) => json!({
            "kind": "queue",
            "concurrency": q.concurrency.map_or(json!("unlimited"), |c| json!(c)),
            "queue_limit": q.queue_limit.map_or(json!("unlimited"), |c| json!(c)),
            "discipline": discipline_json(q.discipline),
            "service_time": dist_json(&q.service_time),
            "slowdown_per_inflight": q.slowdown_per_inflight.to_string(),
            "error_rate": q.error_rate,
            "permanent_error_rate": s.permanent_error_rate,
            "drop_expired": q.drop_expired,
        }),
        ServerKind::Occ => json!({
            "kind": "occ",
            "permanent_error_rate": s.permanent_error_rate,
        }),
    };
    let mut server = server;
    if !s.faults.is_empty() {
        let faults: Vec<Value> = s.faults.windows().iter().map(fault_json).collect();
        server["faults"] = json!(faults);
    }
    if let Some(r) = &s.rate_limit {
        let mut limit = json!({"rate_per_s": r.rate_per_s, "burst": r.burst});
        if let Some(after) = r.retry_after {
            limit["retry_after"] = json!(after.to_string());
        }
        server["rate_limit"] = limit;
    }
    server
}

/// A service of a call graph: its server's settings, its call mode and its calls.
fn service_json(s: &Scenario, service: &Service) -> Value {
    let mut out = server_json(&service.server);
    out["call_mode"] = json!(if service.parallel {
        "parallel"
    } else {
        "sequential"
    });
    let calls: Vec<Value> = service
        .calls
        .iter()
        .map(|call| {
            json!({
                "to": s.services[call.to].name,
                "fraction": call.fraction,
                "policy": policy_json(&call.policy, true),
            })
        })
        .collect();
    out["calls"] = json!(calls);
    out
}

/// A policy, every default filled in; `on_call` for a call between services, whose policy
/// also says whether it propagates its deadline.
fn policy_json(p: &Policy, on_call: bool) -> Value {
    let mut policy = Map::new();
    if let Some(t) = p.timeout {
        policy.insert("timeout".into(), json!(t.to_string()));
    }
    if let Some(d) = p.deadline {
        policy.insert("deadline".into(), json!(d.to_string()));
    }
    let backoff = match &p.retry.backoff {
        Backoff::None => json!("none"),
        Backoff::Exponential {
            base,
            multiplier,
            cap,
            jitter,
            ..
        } => {
            json!({"base": base.to_string(), "multiplier": multiplier, "cap": cap.to_string(), "jitter": jitter.name()})
        }
    };
    let retry_on: Vec<&str> = p.retry.retry_on.iter().map(|o| o.name()).collect();
    policy.insert(
        "retry".into(),
        json!({
            "max_attempts": p.retry.max_attempts.map_or(json!("unlimited"), |n| json!(n)),
            "retry_on": retry_on,
            "backoff": backoff,
            "retry_after": match p.retry.retry_after { RetryAfter::Honor => "honor", RetryAfter::Ignore => "ignore" },
        }),
    );
    if let Some(b) = &p.budget {
        policy.insert("budget".into(), budget_json(b));
    }
    if let Some(b) = &p.breaker {
        policy.insert("breaker".into(), breaker_json(b));
    }
    if let Some(b) = &p.bulkhead {
        policy.insert(
            "bulkhead".into(),
            json!({"max_concurrent": b.max_concurrent, "max_wait": b.max_wait.to_string()}),
        );
    }
    if let Some(latency) = &p.fallback {
        policy.insert("fallback".into(), json!({"latency": dist_json(latency)}));
    }
    if on_call {
        policy.insert("propagate_deadline".into(), json!(p.propagate_deadline));
    }
    // Written only when set, so a scenario without them echoes as it always did.
    if let Some(h) = &p.hedge {
        policy.insert("hedge".into(), hedge_json(h));
    }
    if !p.idempotent {
        policy.insert("idempotent".into(), json!(false));
    }
    if let Some(k) = &p.idempotency_key {
        policy.insert(
            "idempotency_key".into(),
            json!({"ttl": k.ttl.to_string(), "cost": k.cost.to_string()}),
        );
    }
    if let Some(t) = &p.adaptive_throttle {
        policy.insert(
            "adaptive_throttle".into(),
            json!({"k": t.k(), "window": t.window.to_string()}),
        );
    }
    Value::Object(policy)
}

fn hedge_json(h: &HedgeConfig) -> Value {
    let mut out = Map::new();
    match h.delay {
        HedgeDelay::Fixed(d) => {
            out.insert("delay".into(), json!(d.to_string()));
        }
        HedgeDelay::Percentile { quantile, window } => {
            out.insert("delay".into(), json!(percentile_text(quantile)));
            out.insert("window".into(), json!(window));
        }
    }
    out.insert("max_hedges".into(), json!(h.max_hedges));
    out.insert("cancel".into(), json!(h.cancel));
    if let Some(b) = h.budget {
        out.insert("budget".into(), json!(b));
    }
    Value::Object(out)
}

fn budget_json(b: &BudgetConfig) -> Value {
    let kind = match b.kind {
        BudgetKind::TokenBucket {
            max_tokens,
            token_ratio,
        } => json!({"token_bucket": {"max_tokens": max_tokens, "token_ratio": token_ratio}}),
        BudgetKind::RetryQuota {
            initial,
            retry_cost,
            timeout_cost,
            success_refund,
        } => json!({"retry_quota": {
            "initial": initial, "retry_cost": retry_cost,
            "timeout_cost": timeout_cost, "success_refund": success_refund,
        }}),
        BudgetKind::Ratio {
            percent,
            min_per_s,
            window,
        } => json!({"ratio": {
            "percent": percent, "min_per_s": min_per_s, "window": window.to_string(),
        }}),
    };
    let mut out = json!({"scope": b.scope.name()});
    if let (Value::Object(out), Value::Object(kind)) = (&mut out, kind) {
        out.extend(kind);
    }
    out
}

fn breaker_json(b: &BreakerConfig) -> Value {
    let window = match b.window {
        BreakerWindow::Count(n) => json!({"count": n}),
        BreakerWindow::Time(d) => json!({"time": d.to_string()}),
    };
    let mut out = json!({
        "window": window,
        "failure_rate_threshold": b.failure_rate_threshold,
        "minimum_calls": b.minimum_calls,
        "open_duration": b.open_duration.to_string(),
        "half_open_calls": b.half_open_calls,
        "mode": match b.mode { BreakerMode::All => "all", BreakerMode::Retries => "retries" },
        "scope": b.scope.name(),
    });
    if let Some((duration, rate)) = b.slow_call {
        out["slow_call_duration"] = json!(duration.to_string());
        out["slow_call_rate_threshold"] = json!(rate);
    }
    out
}

fn fault_json(f: &Fault) -> Value {
    let mut w = Map::new();
    w.insert("from".into(), json!((f.from - SimTime::ZERO).to_string()));
    w.insert("to".into(), json!((f.to - SimTime::ZERO).to_string()));
    let (key, value) = match f.effect {
        FaultEffect::Outage(Outage::Reject) => ("outage", json!("reject")),
        FaultEffect::Outage(Outage::Drop) => ("outage", json!("drop")),
        FaultEffect::ErrorRate(p) => ("error_rate", json!(p)),
        FaultEffect::ServiceTimeFactor(x) => ("service_time_factor", json!(x)),
        FaultEffect::Concurrency(c) => ("concurrency", json!(c)),
    };
    w.insert(key.into(), value);
    Value::Object(w)
}

fn dist_json(d: &Dist) -> Value {
    match d {
        Dist::Constant(c) => json!({"constant": c.to_string()}),
        Dist::Exponential { mean, .. } => json!({"exponential": {"mean": mean.to_string()}}),
        Dist::Uniform { min, max } => {
            json!({"uniform": {"min": min.to_string(), "max": max.to_string()}})
        }
        Dist::Normal { mean, sd, .. } => {
            json!({"normal": {"mean": mean.to_string(), "sd": sd.to_string()}})
        }
        Dist::LogNormal { median, sigma, .. } => {
            json!({"lognormal": {"median": median.to_string(), "sigma": sigma}})
        }
        Dist::Mixture { parts, .. } => {
            let parts: Vec<Value> = parts
                .iter()
                .map(|(w, d)| json!({"weight": w, "dist": dist_json(d)}))
                .collect();
            json!({ "mixture": parts })
        }
    }
}
